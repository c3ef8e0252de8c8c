/// One move of a customer's credit, kept on the ledger under a request id: a sale approved
/// (`spent`), a sale that failed after approval put back to the credit (`refunded`, under the
/// sale's id), or credit left standing taken to the cash box (`expired`). Coins raise a credit
/// with their own `coin` events, and change paid back lowers it with its payout's first write.
public struct CreditMove: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case spent, refunded, expired

        public var eventKind: EventKind {
            switch self {
            case .spent: .creditSpent
            case .refunded: .creditRefunded
            case .expired: .creditExpired
            }
        }
    }

    public var kind: Kind
    public var requestID: String
    public var source: String
    public var account: String
    public var currency: String
    public var amountMinor: Int64
    /// What was sold, as the sale application names it (a sale only).
    public var item: String?
    /// Who moved it (the peer's user name, or the daemon's rule).
    public var by: String

    public init(kind: Kind, requestID: String, source: String, account: String, currency: String, amountMinor: Int64, item: String? = nil, by: String) {
        self.kind = kind
        self.requestID = requestID
        self.source = source
        self.account = account
        self.currency = currency
        self.amountMinor = amountMinor
        self.item = item
        self.by = by
    }
}
