/// A payout asked for: pay `amountMinor` of `currency`, once per `requestID`. The request id
/// is the asker's: a repeat of it is answered from the ledger and never paid again.
public struct PayoutOrder: Sendable, Hashable {
    public var requestID: String
    public var amountMinor: Int64
    public var currency: String
    /// Who asked (the peer's user name).
    public var by: String
    /// The customer's credit account it pays back (a cancel: the credit as change), if any: the
    /// payout's first write takes the amount off that credit, in the same transaction.
    public var creditAccount: String?

    public init(requestID: String, amountMinor: Int64, currency: String, by: String, creditAccount: String? = nil) {
        self.requestID = requestID
        self.amountMinor = amountMinor
        self.currency = currency
        self.by = by
        self.creditAccount = creditAccount
    }
}
