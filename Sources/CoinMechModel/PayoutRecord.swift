/// A payout as the ledger holds it (`payouts` and `payout_steps`): what was asked, the steps
/// journalled, and how it ended (`settlement` nil while it is open).
public struct PayoutRecord: Sendable, Hashable {
    public var order: PayoutOrder
    public var source: String
    /// The `payout_requested` event, and the settling one.
    public var requestedSeq: Int64
    public var settledSeq: Int64?
    public var steps: [PayoutStep]
    public var settlement: PayoutSettlement?
    /// The changer that paid it (serial number and coin table), as journalled.
    public var device: String?

    public init(order: PayoutOrder, source: String, requestedSeq: Int64, settledSeq: Int64?, steps: [PayoutStep], settlement: PayoutSettlement?) {
        self.order = order
        self.source = source
        self.requestedSeq = requestedSeq
        self.settledSeq = settledSeq
        self.steps = steps
        self.settlement = settlement
    }

    public var isOpen: Bool { settlement == nil }
}
