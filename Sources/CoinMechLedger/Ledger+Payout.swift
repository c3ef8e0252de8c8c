import CoinMechModel
import Foundation
import GRDB

extension Ledger {
    /// The payout recorded under `requestID`, nil if none.
    public func payout(requestID: String) throws(LedgerError) -> PayoutRecord? {
        try read { db in try Self.payouts(db, where: "p.request_id = ?", [requestID]).first }
    }

    /// The payouts of `source` that are open: begun by a daemon that did not settle them.
    public func openPayouts(source: String) throws(LedgerError) -> [PayoutRecord] {
        try read { db in try Self.payouts(db, where: "p.source = ? AND p.state = 'open'", [source]) }
    }

    /// Every payout of `source`, oldest first.
    public func payouts(source: String) throws(LedgerError) -> [PayoutRecord] {
        try read { db in try Self.payouts(db, where: "p.source = ?", [source]) }
    }

    /// The moves of `changes` that are on the ledger already: a payout step's count is recorded
    /// once, so a commit that reported a failure but landed leaves its counts here.
    public func counted(_ changes: [InventoryChange]) throws(LedgerError) -> [InventoryChange] {
        try read { db in try changes.filter { try LedgerWriter.isCounted(db, $0) } }
    }

    /// The operator's refill or float recorded under `requestID`, nil if none.
    public func operatorInventoryChange(requestID: String) throws(LedgerError) -> OperatorInventoryRecord? {
        try read { db in try LedgerWriter.operatorChange(db, requestID: requestID) }
    }

    /// The payout units' levels of `source` (its hoppers), by unit.
    public func inventory(source: String) throws(LedgerError) -> [Int: InventoryLevel] {
        try read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT unit, coin_id, value_minor, level, updated_seq FROM inventory WHERE source = ?", arguments: [source])
            return Dictionary(uniqueKeysWithValues: rows.map { row in
                (row["unit"], InventoryLevel(unit: row["unit"], coinID: row["coin_id"], valueMinor: row["value_minor"], level: row["level"], updatedSeq: row["updated_seq"]))
            })
        }
    }

    private static func payouts(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> [PayoutRecord] {
        let rows = try Row.fetchAll(db, sql: """
            SELECT p.request_id, p.source, p.requested_seq, p.currency, p.amount_minor, p.by, p.state, p.paid_minor, p.debt_minor,
                   p.settled_seq, p.device, p.credit_account, e.detail
            FROM payouts p LEFT JOIN events e ON e.seq = p.settled_seq
            WHERE \(condition) ORDER BY p.requested_seq
            """, arguments: arguments)
        return try rows.map { row in
            let requestID: String = row["request_id"]
            let steps = try Row.fetchAll(db, sql: "SELECT type, coin_id, value_minor, count, tube_before, device_mark, device, tubes_before FROM payout_steps WHERE request_id = ? ORDER BY step",
                                         arguments: [requestID]).map { step in
                var read = PayoutStep(type: step["type"], coinID: step["coin_id"], valueMinor: step["value_minor"], count: step["count"], tubeBefore: step["tube_before"],
                                      deviceMark: step["device_mark"], device: step["device"])
                // A count that does not read back leaves the list empty: the payout settles as
                // unverified (`PayoutRun.unreadable`), never from a count taken as 0.
                read.tubesBefore = (step["tubes_before"] as String?).map { text in
                    let counts = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
                    return counts.contains(nil) ? [] : counts.compactMap { $0 }
                }
                return read
            }
            let order = PayoutOrder(requestID: requestID, amountMinor: row["amount_minor"], currency: row["currency"], by: row["by"],
                                    creditAccount: row["credit_account"])
            var settlement: PayoutSettlement?
            if let state: String = row["state"], state != "open", let outcome = PayoutSettlement.Outcome(rawValue: state) {
                let detail = (row["detail"] as String?).flatMap(Self.detail) ?? [:]
                settlement = PayoutSettlement(outcome: outcome, paidMinor: row["paid_minor"], debtMinor: row["debt_minor"],
                                              paidCoins: detail["paid"].flatMap(PayoutCoinsText.parse) ?? [:], reason: detail["reason"],
                                              afterRestart: detail["after_restart"] == "true")
            }
            var record = PayoutRecord(order: order, source: row["source"], requestedSeq: row["requested_seq"], settledSeq: row["settled_seq"],
                                      steps: steps, settlement: settlement)
            record.device = row["device"]
            return record
        }
    }

    private static func detail(_ json: String) -> [String: String]? {
        try? JSONDecoder().decode([String: String].self, from: Data(json.utf8))
    }
}
