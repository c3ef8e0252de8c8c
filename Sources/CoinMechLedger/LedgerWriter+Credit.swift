import CoinMechModel
import Foundation
import GRDB

/// A customer's credit: accounts opened, raised by coins, lowered by sales, change and expiry.
/// Each write runs inside one `append` transaction with its event, so a balance and the events
/// that moved it land together or not at all; the CHECKs (a balance never below 0, one move of
/// a kind per request id) hold it even against a caller that checked nothing.
extension LedgerWriter {
    func creditOpened(source: String, account: String, currencies: [String], by: String) throws -> [LedgerEvent] {
        var events: [LedgerEvent] = []
        for currency in currencies {
            let open = try Bool.fetchOne(db, sql: "SELECT 1 FROM credit_accounts WHERE source = ? AND account = ? AND currency = ?",
                                         arguments: [source, account, currency]) == true
            guard !open else { continue }
            let event = try insertCreditEvent(.creditOpened, source: source, currency: currency, valueMinor: 0, balance: 0,
                                              detail: ["account": account, "by": by])
            try db.execute(sql: """
                INSERT INTO credit_accounts (source, account, currency, balance_minor, opened_seq, moved_seq, moved_time)
                VALUES (?, ?, ?, 0, ?, ?, ?)
                """, arguments: [source, account, currency, event.seq, event.seq, time])
            events.append(event)
        }
        return events
    }

    /// A coin credited raises its source's account in its currency, if credit is held for it:
    /// one statement in the coin's own transaction (no row, no change).
    func raiseCredit(source: String, currency: String, valueMinor: Int64, coinSeq: Int64) throws {
        try db.cachedStatement(sql: """
            UPDATE credit_accounts SET balance_minor = balance_minor + ?, moved_seq = ?, moved_time = ?
            WHERE source = ? AND account = ? AND currency = ?
            """).execute(arguments: [valueMinor, coinSeq, time, source, source, currency])
    }

    func credit(_ move: CreditMove) throws -> LedgerEvent {
        guard move.amountMinor > 0 else { throw LedgerPrecondition(message: "a credit move of \(move.amountMinor): an amount is above 0") }
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM credit_moves WHERE request_id = ? AND kind = ?", arguments: [move.requestID, move.kind.rawValue]) == true {
            throw LedgerPrecondition(message: "credit request \(move.requestID) (\(move.kind.rawValue)) is on the ledger already: it is answered from there")
        }
        let balance = try balance(source: move.source, account: move.account, currency: move.currency)
        let after: Int64
        switch move.kind {
        case .spent:
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM payouts WHERE request_id = ?", arguments: [move.requestID]) == true {
                throw LedgerPrecondition(message: "request id \(move.requestID) is a payout's: a sale takes an id of its own")
            }
            guard balance >= move.amountMinor else {
                throw LedgerPrecondition(message: "a sale of \(move.amountMinor) \(move.currency) is more than the credit of \(balance)")
            }
            after = balance - move.amountMinor
        case .refunded:
            // Only a sale approved under this id, for its own amount, in its own account.
            let sale = try Row.fetchOne(db, sql: "SELECT account, currency, amount_minor FROM credit_moves WHERE request_id = ? AND kind = 'spent'",
                                        arguments: [move.requestID])
            guard let sale, sale["account"] == move.account, sale["currency"] == move.currency, sale["amount_minor"] == move.amountMinor else {
                throw LedgerPrecondition(message: "no sale of \(move.amountMinor) \(move.currency) was approved under request id \(move.requestID): nothing to refund")
            }
            after = balance + move.amountMinor
        case .expired:
            // All of a balance that has not moved since it was read: a coin or a sale in between
            // makes the expiry stale, and it is judged again.
            guard balance == move.amountMinor else {
                throw LedgerPrecondition(message: "the credit is \(balance), not the \(move.amountMinor) read for its expiry: it moved")
            }
            after = 0
        }
        var detail = ["request_id": move.requestID, "account": move.account, "by": move.by]
        if let item = move.item { detail["item"] = item }
        let event = try insertCreditEvent(move.kind.eventKind, source: move.source, currency: move.currency, valueMinor: move.amountMinor, balance: after,
                                          detail: detail)
        try db.execute(sql: """
            INSERT INTO credit_moves (request_id, kind, source, account, currency, amount_minor, item, by, seq, balance_after)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [move.requestID, move.kind.rawValue, move.source, move.account, move.currency, move.amountMinor, move.item, move.by, event.seq, after])
        try setBalance(after, by: event, source: move.source, account: move.account, currency: move.currency)
        return event
    }

    /// Credit paid back as change: the payout's amount off its account, with a `credit_returned`
    /// event, in the payout's first transaction (a payout refused before it is journalled takes
    /// nothing; one journalled has taken it, whatever it pays: what it does not is owed).
    func returnCredit(_ order: PayoutOrder, account: String, source: String) throws -> LedgerEvent {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM credit_moves WHERE request_id = ?", arguments: [order.requestID]) == true {
            throw LedgerPrecondition(message: "request id \(order.requestID) is a sale's: paying credit back takes an id of its own")
        }
        let balance = try balance(source: source, account: account, currency: order.currency)
        guard balance >= order.amountMinor else {
            throw LedgerPrecondition(message: "paying back \(order.amountMinor) \(order.currency) is more than the credit of \(balance)")
        }
        let after = balance - order.amountMinor
        let event = try insertCreditEvent(.creditReturned, source: source, currency: order.currency, valueMinor: order.amountMinor, balance: after,
                                          detail: ["request_id": order.requestID, "account": account, "by": order.by])
        try setBalance(after, by: event, source: source, account: account, currency: order.currency)
        return event
    }

    /// An account's balance; refused where no credit is held for it.
    private func balance(source: String, account: String, currency: String) throws -> Int64 {
        guard let balance = try Int64.fetchOne(db, sql: "SELECT balance_minor FROM credit_accounts WHERE source = ? AND account = ? AND currency = ?",
                                               arguments: [source, account, currency]) else {
            throw LedgerPrecondition(message: "no credit is held for \(source)/\(account) in \(currency)")
        }
        return balance
    }

    /// An account's balance after `event` moved it.
    private func setBalance(_ balance: Int64, by event: LedgerEvent, source: String, account: String, currency: String) throws {
        try db.execute(sql: "UPDATE credit_accounts SET balance_minor = ?, moved_seq = ?, moved_time = ? WHERE source = ? AND account = ? AND currency = ?",
                       arguments: [balance, event.seq, time, source, account, currency])
    }

    /// A credit event: the amount in the `currency` and `value_minor` columns, as a coin's is,
    /// so that SQL sums it by kind, and the balance it left in its detail (`balance_minor`).
    private func insertCreditEvent(_ kind: EventKind, source: String, currency: String, valueMinor: Int64, balance: Int64,
                                   detail: [String: String]) throws -> LedgerEvent {
        var detail = detail
        detail["balance_minor"] = "\(balance)"
        let json = try Self.json(detail)
        try db.execute(sql: "INSERT INTO events (time, kind, source, currency, value_minor, detail) VALUES (?, ?, ?, ?, ?, ?)",
                       arguments: [time, kind.rawValue, source, currency, valueMinor, json])
        var event = LedgerEvent(seq: db.lastInsertedRowID, time: time, kind: kind.rawValue, source: source, currency: currency, valueMinor: valueMinor, detail: json)
        event.creditBalanceMinor = balance
        return event
    }
}
