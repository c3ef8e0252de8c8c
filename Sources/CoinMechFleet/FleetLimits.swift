/// The bounds the fleet holds every cabinet's input to (docs/FLEET.md, "What a cabinet cannot
/// do to the fleet"). A cabinet stands in a public place and its broker credentials can be
/// stolen: nothing it sends may crash the fleet or grow it without bound, whatever the bridge
/// in front of it would have sent.
public enum FleetLimits {
    /// The contract's seqs stay below 2^53 (JSON numbers every consumer reads exactly): the
    /// highest seq the fleet takes. A ledger writing one seq a millisecond takes 285,000 years
    /// to reach it.
    public static let maxSeq: Int64 = (1 << 53) - 1

    /// The most one coin may be worth, in minor units: 100,000.00 of any two-decimal currency,
    /// above every coin minted (the largest circulating ones are worth a few hundred of their
    /// currency). A coin's `value_minor` lies in 0 … this. With at most `maxSeq` events per
    /// cabinet, the sums are kept in PostgreSQL's `numeric` and clamped where they are shown.
    public static let maxCoinMinor: Int64 = 10_000_000

    /// A collection's or a totals row's `value_minor`: a sum of coins, in 0 … this.
    public static let maxSumMinor: Int64 = (1 << 53) - 1
}
