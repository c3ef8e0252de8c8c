import CoinMechModel
import Foundation
import GRDB

/// A customer's credit as the ledger holds it (LedgerWriter+Credit writes it).
extension Ledger {
    /// The credit accounts of `source`, by account and currency.
    public func creditAccounts(source: String) throws(LedgerError) -> [CreditAccount] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT source, account, currency, balance_minor, opened_seq, moved_seq, moved_time FROM credit_accounts
                WHERE source = ? ORDER BY account, currency
                """, arguments: [source]).map { row in
                CreditAccount(source: row["source"], account: row["account"], currency: row["currency"], balanceMinor: row["balance_minor"],
                              openedSeq: row["opened_seq"], movedSeq: row["moved_seq"], movedTime: row["moved_time"])
            }
        }
    }

    /// The credit moves under `requestID` (a sale, and its refund if any), oldest first.
    public func creditMoves(requestID: String) throws(LedgerError) -> [CreditMoveRecord] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT request_id, kind, source, account, currency, amount_minor, item, by, seq, balance_after FROM credit_moves
                WHERE request_id = ? ORDER BY seq
                """, arguments: [requestID]).compactMap { row in
                guard let kind = CreditMove.Kind(rawValue: row["kind"]) else { return nil }
                let move = CreditMove(kind: kind, requestID: row["request_id"], source: row["source"], account: row["account"], currency: row["currency"],
                                      amountMinor: row["amount_minor"], item: row["item"], by: row["by"])
                return CreditMoveRecord(move: move, seq: row["seq"], balanceAfterMinor: row["balance_after"])
            }
        }
    }
}
