/// An operator's refill or float as the ledger recorded it under its request id: what a repeat
/// of the request is answered from, and checked against.
public struct OperatorInventoryRecord: Sendable, Hashable {
    public var requestID: String
    /// The `inventory_refilled` or `inventory_set` event.
    public var seq: Int64
    public var source: String
    /// A refill (coins added); otherwise a float (the level counted).
    public var refill: Bool
    public var unit: Int
    public var coinID: String?
    /// The coins added (refill) or counted (float).
    public var coins: Int
    public var levelBefore: Int
    public var level: Int
    public var by: String

    public init(requestID: String, seq: Int64, source: String, refill: Bool, unit: Int, coinID: String?, coins: Int, levelBefore: Int, level: Int, by: String) {
        self.requestID = requestID
        self.seq = seq
        self.source = source
        self.refill = refill
        self.unit = unit
        self.coinID = coinID
        self.coins = coins
        self.levelBefore = levelBefore
        self.level = level
        self.by = by
    }
}
