import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
import CoinMechPublisher

extension DaemonControl {
    /// `credit`: the source's accounts as the ledger holds them. A read of the ledger, as
    /// `totals` is: the deciding loop writes them, in the same transaction as what moved them.
    func credit() throws(CommandError) -> JSON {
        CreditBalanceReply(source: configuration.source.name, accounts: try creditAccounts().map(Self.account)).json
    }

    func creditAccounts() throws(CommandError) -> [CreditAccount] {
        do {
            return try ledger.creditAccounts(source: configuration.source.name)
        } catch {
            throw CommandError(.unavailable, "the ledger cannot be read: \(error)")
        }
    }

    static func account(_ account: CreditAccount) -> CreditBalanceReply.Account {
        .init(account: account.account, currency: account.currency, balanceMinor: account.balanceMinor, movedSeq: account.movedSeq)
    }
}
