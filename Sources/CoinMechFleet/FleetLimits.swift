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

    /// How far above a cabinet's contiguous seq the ingest takes a seq: a bridge publishes at
    /// most its window (256 by default) beyond the fleet's ack. Beyond it, a seq is refused
    /// (`ahead`) and the hole below it asked for: the seqs held above a hole stay bounded.
    public static let maxAhead: Int64 = 10_000

    /// A cabinet's events waiting for the database, at most: more are shed (`CabinetQueues`).
    public static let cabinetQueue = 2_000
    public static let cabinetQueueBytes = 2 << 20

    /// All cabinets' events waiting for the database: beyond this the ingest takes nothing
    /// more from its inbox, which then fills.
    public static let queueBytes = 16 << 20

    /// The MQTT inbox, messages the ingest has not taken yet: once it holds this much, the
    /// link stops reading from the broker, which holds the rest of the session (`MQTTLink`).
    public static let inboxBytes = 8 << 20

    /// The largest message the fleet reads (`ingest.max_message_bytes`): a cabinet's event,
    /// status or totals is a few kilobytes.
    public static let messageBytes = 64 << 10
}
