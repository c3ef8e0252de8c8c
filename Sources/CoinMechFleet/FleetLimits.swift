/// The bounds the fleet holds every cabinet's input to (docs/FLEET.md, "What a cabinet cannot
/// do to the fleet"). A cabinet stands in a public place and its broker credentials can be
/// stolen: nothing it sends may crash the fleet or grow it without bound, whatever the bridge
/// in front of it would have sent.
public enum FleetLimits {
    /// The contract's seqs stay below 2^53 (JSON numbers every consumer reads exactly): the
    /// highest seq the fleet takes. A ledger writing one seq a millisecond takes 285,000 years
    /// to reach it.
    public static let maxSeq: Int64 = (1 << 53) - 1

}
