import CoinMechModel
import Foundation
import GRDB

/// Money out: the payout journal's three writes. Each runs inside one `append` transaction, so
/// a step's event and its row land together or not at all.
extension LedgerWriter {
    func payoutRequested(_ order: PayoutOrder, source: String, plan: String, device: String?) throws -> [LedgerEvent] {
        // The loop looks the request id up first; this is the guarantee behind it.
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM payouts WHERE request_id = ?", arguments: [order.requestID]) == true {
            throw LedgerPrecondition(message: "payout request \(order.requestID) is on the ledger already: it is answered from there, never paid again")
        }
        var detail = ["request_id": order.requestID, "amount_minor": "\(order.amountMinor)", "currency": order.currency, "by": order.by, "plan": plan]
        if let device { detail["device"] = device }
        if let account = order.creditAccount { detail["credit_account"] = account }
        let (event, seq) = try insertEvent(kind: .payoutRequested, source: source, detail: detail)
        try db.execute(sql: """
            INSERT INTO payouts (request_id, source, requested_seq, currency, amount_minor, by, state, device, credit_account)
            VALUES (?, ?, ?, ?, ?, ?, 'open', ?, ?)
            """, arguments: [order.requestID, source, seq, order.currency, order.amountMinor, order.by, device, order.creditAccount])
        guard let account = order.creditAccount else { return [event] }
        return [event, try returnCredit(order, account: account, source: source)]
    }

    func payoutDispensing(requestID: String, step: Int, _ dispense: PayoutStep) throws -> LedgerEvent {
        guard let source = try String.fetchOne(db, sql: "SELECT source FROM payouts WHERE request_id = ? AND state = 'open'", arguments: [requestID]) else {
            throw LedgerPrecondition(message: "payout request \(requestID) is not open: no coin may move for it")
        }
        var detail = ["request_id": requestID, "step": "\(step)", "type": "\(dispense.type)", "value_minor": "\(dispense.valueMinor)",
                      "count": "\(dispense.count)", "tube_before": "\(dispense.tubeBefore)"]
        if let coinID = dispense.coinID { detail["coin_id"] = coinID }
        if let mark = dispense.deviceMark { detail["device_mark"] = "\(mark)" }
        if let device = dispense.device { detail["device"] = device }
        let tubesBefore = dispense.tubesBefore.map { $0.map(String.init).joined(separator: ",") }
        if let tubesBefore { detail["tubes_before"] = tubesBefore }
        let (event, seq) = try insertEvent(kind: .payoutDispensing, source: source, detail: detail)
        try db.execute(sql: """
            INSERT INTO payout_steps (request_id, step, dispensing_seq, type, coin_id, value_minor, count, tube_before, device_mark, device, tubes_before)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [requestID, step, seq, dispense.type, dispense.coinID, dispense.valueMinor, dispense.count, dispense.tubeBefore,
                             dispense.deviceMark, dispense.device, tubesBefore])
        return event
    }

    func payoutSettled(requestID: String, _ settlement: PayoutSettlement) throws -> LedgerEvent {
        guard let source = try String.fetchOne(db, sql: "SELECT source FROM payouts WHERE request_id = ? AND state = 'open'", arguments: [requestID]) else {
            throw LedgerPrecondition(message: "payout request \(requestID) is not open: a payout is settled once")
        }
        var detail = ["request_id": requestID, "paid_minor": "\(settlement.paidMinor)", "debt_minor": "\(settlement.debtMinor)",
                      "paid": PayoutCoinsText.text(settlement.paidCoins), "after_restart": "\(settlement.afterRestart)"]
        if let reason = settlement.reason { detail["reason"] = reason }
        let (event, seq) = try insertEvent(kind: settlement.outcome.kind, source: source, detail: detail)
        try db.execute(sql: "UPDATE payouts SET state = ?, paid_minor = ?, debt_minor = ?, settled_seq = ? WHERE request_id = ?",
                       arguments: [settlement.outcome.rawValue, settlement.paidMinor, settlement.debtMinor, seq, requestID])
        return event
    }

    /// A unit's level moved; its row and its event land together. A step's count is recorded
    /// once: a second one for the same step is refused, so a retried write cannot lower the
    /// level twice.
    func inventory(_ change: InventoryChange) throws -> LedgerEvent {
        // A row counted for another coin (the unit's hopper changed) is no level of this one.
        let row = try Row.fetchOne(db, sql: "SELECT level, coin_id FROM inventory WHERE source = ? AND unit = ?", arguments: [change.source, change.unit])
        let before: Int = row.flatMap { row in (row["coin_id"] as String?) == change.coinID ? row["level"] : nil } ?? 0
        let level = change.level(after: before)
        var detail = ["unit": "\(change.unit)", "value_minor": "\(change.valueMinor)", "level_before": "\(before)", "level": "\(level)"]
        if let coinID = change.coinID { detail["coin_id"] = coinID }
        switch change.kind {
        case .paid(let requestID, let step, let paid, let unpaid):
            if try Self.isCounted(db, change) { throw LedgerPrecondition(message: "payout \(requestID) step \(step) is counted on the ledger already") }
            detail["request_id"] = requestID
            detail["step"] = "\(step)"
            detail["paid"] = "\(paid)"
            detail["unpaid"] = "\(unpaid)"
        case .refilled(let added, let by, _):
            detail["added"] = "\(added)"
            detail["by"] = by
        case .set(_, let by, _):
            detail["by"] = by
        }
        if let requestID = change.kind.operatorRequestID {
            // The loop looks the request id up first; this is the guarantee behind it.
            if try Self.operatorChange(db, requestID: requestID) != nil {
                throw LedgerPrecondition(message: "inventory request \(requestID) is on the ledger already: it is answered from there, never counted again")
            }
            detail["request_id"] = requestID
        }
        let (event, seq) = try insertEvent(kind: change.kind.eventKind, source: change.source, detail: detail)
        try db.execute(sql: """
            INSERT INTO inventory (source, unit, coin_id, value_minor, level, updated_seq) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (source, unit) DO UPDATE SET coin_id = excluded.coin_id, value_minor = excluded.value_minor,
                level = excluded.level, updated_seq = excluded.updated_seq
            """, arguments: [change.source, change.unit, change.coinID, change.valueMinor, level, seq])
        return event
    }

    /// The operator's refill or float recorded under `requestID`, nil if none. Both kinds share
    /// one space of ids: an id is one operator action.
    static func operatorChange(_ db: Database, requestID: String) throws -> OperatorInventoryRecord? {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT seq, kind, source, detail FROM events WHERE kind IN ('inventory_refilled', 'inventory_set')
            AND json_extract(detail, '$.request_id') = ? ORDER BY seq LIMIT 1
            """, arguments: [requestID]) else { return nil }
        let detail = (try? JSONDecoder().decode([String: String].self, from: Data((row["detail"] as String? ?? "{}").utf8))) ?? [:]
        let kind: String = row["kind"]
        return OperatorInventoryRecord(requestID: requestID, seq: row["seq"], source: row["source"], refill: kind == "inventory_refilled",
                                       unit: detail["unit"].flatMap { Int($0) } ?? -1, coinID: detail["coin_id"],
                                       coins: (kind == "inventory_refilled" ? detail["added"] : detail["level"]).flatMap { Int($0) } ?? -1,
                                       levelBefore: detail["level_before"].flatMap { Int($0) } ?? 0, level: detail["level"].flatMap { Int($0) } ?? 0,
                                       by: detail["by"] ?? "")
    }

    /// Whether `change`, a payout step's count, is on the ledger (an operator's float or refill
    /// is a new move each time: never).
    static func isCounted(_ db: Database, _ change: InventoryChange) throws -> Bool {
        guard case .paid(let requestID, let step, _, _) = change.kind else { return false }
        return try Bool.fetchOne(db, sql: """
            SELECT 1 FROM events WHERE kind = 'inventory_paid' AND json_extract(detail, '$.request_id') = ?
            AND json_extract(detail, '$.step') = ? AND json_extract(detail, '$.unit') = ?
            """, arguments: [requestID, "\(step)", "\(change.unit)"]) == true
    }
}
