/// A customer's credit in one currency, as the ledger keeps it: what coins put in and sales,
/// change and expiry have not taken out. A source has one account (named after it) once credit
/// is held for it; coins raise it in their own `coin` event's transaction.
public struct CreditAccount: Sendable, Hashable {
    public var source: String
    public var account: String
    public var currency: String
    public var balanceMinor: Int64
    /// The event that opened it, and the last one that moved it (and when, in seconds since
    /// 1970): credit left standing is judged by how long it has not moved.
    public var openedSeq: Int64
    public var movedSeq: Int64
    public var movedTime: Double

    public init(source: String, account: String, currency: String, balanceMinor: Int64, openedSeq: Int64, movedSeq: Int64, movedTime: Double) {
        self.source = source
        self.account = account
        self.currency = currency
        self.balanceMinor = balanceMinor
        self.openedSeq = openedSeq
        self.movedSeq = movedSeq
        self.movedTime = movedTime
    }
}
