/// One payout unit's level as the ledger holds it (`inventory` row).
public struct InventoryLevel: Sendable, Hashable {
    public var unit: Int
    public var coinID: String?
    public var valueMinor: Int64
    /// Coins held, by the ledger's account; below 0 when a hopper paid more than it was
    /// thought to hold.
    public var level: Int
    /// The event that last moved it.
    public var updatedSeq: Int64

    public init(unit: Int, coinID: String?, valueMinor: Int64, level: Int, updatedSeq: Int64) {
        self.unit = unit
        self.coinID = coinID
        self.valueMinor = valueMinor
        self.level = level
        self.updatedSeq = updatedSeq
    }
}
