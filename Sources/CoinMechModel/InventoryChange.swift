/// A move of one payout unit's level (a hopper's coins), as the ledger's `inventory` row and
/// its event record it. A hopper cannot count the coins it holds: its level is the ledger's,
/// set by an operator's count, raised by refills, and lowered by what the hopper itself says
/// each payout step paid.
public struct InventoryChange: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// A payout step, by the hopper's own account: `paid` coins out, `unpaid` left.
        case paid(requestID: String, step: Int, paid: Int, unpaid: Int)
        /// An operator loaded `added` coins; once per `requestID` when one is given.
        case refilled(added: Int, by: String, requestID: String? = nil)
        /// An operator counted the unit at `level` coins (a float); once per `requestID` when
        /// one is given.
        case set(level: Int, by: String, requestID: String? = nil)

        /// An operator's request id (refill, float): a repeat is answered from the ledger.
        public var operatorRequestID: String? {
            switch self {
            case .paid: nil
            case .refilled(_, _, let requestID), .set(_, _, let requestID): requestID
            }
        }

        public var eventKind: EventKind {
            switch self {
            case .paid: .inventoryPaid
            case .refilled: .inventoryRefilled
            case .set: .inventorySet
            }
        }
    }

    public var source: String
    /// The unit's index in the mech's payout table (the payout steps' `type`).
    public var unit: Int
    public var coinID: String?
    public var valueMinor: Int64
    public var kind: Kind

    public init(source: String, unit: Int, coinID: String?, valueMinor: Int64, kind: Kind) {
        self.source = source
        self.unit = unit
        self.coinID = coinID
        self.valueMinor = valueMinor
        self.kind = kind
    }

    /// The level after the change, from the level before. It may go below 0: a hopper that
    /// pays more than the ledger thought it held says the count was wrong, and the payout
    /// plan treats it as empty until an operator counts it.
    public func level(after before: Int) -> Int {
        switch kind {
        case .paid(_, _, let paid, _): before - paid
        case .refilled(let added, _, _): before + added
        case .set(let level, _, _): level
        }
    }
}
