import CoinMechModel
import Foundation
import GRDB

/// Records entries inside one `append` transaction.
struct LedgerWriter {
    let db: Database
    let time: Double

    mutating func record(_ entry: LedgerEntry) throws -> EntryOutcome {
        switch entry {
        case .decision(let record, let credit):
            return try insertDecision(record, credit: credit)
        case .resolve(let decisionSeq, let resolution, let message):
            return try resolve(decisionSeq: decisionSeq, resolution, message: message)
        case .lateCredit(let decisionSeq, let message):
            return try lateCredit(decisionSeq: decisionSeq, message: message)
        case .note(let occurrence):
            return .recorded([try insertNote(occurrence)])
        case .collect(let by):
            return .recorded([try collect(by: by)])
        case .payoutRequested(let order, let source, let plan, let device):
            return .recorded(try payoutRequested(order, source: source, plan: plan, device: device))
        case .payoutDispensing(let requestID, let step, let dispense):
            return .recorded([try payoutDispensing(requestID: requestID, step: step, dispense)])
        case .payoutSettled(let requestID, let settlement):
            return .recorded([try payoutSettled(requestID: requestID, settlement)])
        case .inventory(let change):
            return .recorded([try inventory(change)])
        case .creditOpened(let source, let account, let currencies, let by):
            return .recorded(try creditOpened(source: source, account: account, currencies: currencies, by: by))
        case .credit(let move):
            return .recorded([try credit(move)])
        }
    }

    private func insertDecision(_ record: DecisionRecord, credit: CreditRule) throws -> EntryOutcome {
        var currency: String?, denomination: String?, value: Int64?, reason: String?, message: String?, state: String?
        switch record.verdict {
        case .accept(let c, let code, let v):
            (currency, denomination, value) = (c, code, v)
            state = credit == .atOnce ? Resolution.credited.rawValue : "pending"
        case .reject(let r, let m):
            (reason, message) = (r, m)
        }
        let verdict = record.verdict.isAccept ? "accept" : "reject"
        let deviceSeq = Int64(bitPattern: record.deviceSeq)
        let detailJSON = try record.detail.map(Self.json)
        // Cached statements: compiled once per connection, not per coin. A coin already on the
        // ledger (same source, epoch, device seq) conflicts with `events_reading` and is skipped.
        try db.cachedStatement(sql: """
            INSERT INTO events (time, kind, source, epoch, device_seq, diameter_mm, weight_g, thickness_mm, channel,
                                verdict, currency, denomination, value_minor, link, reason, message, chain_generation, state, detail,
                                conductivity_low_iacs, conductivity_high_iacs, permeability)
            VALUES (?, 'decision', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT DO NOTHING
            """).execute(arguments: [
                record.time ?? time, record.source, record.epoch, deviceSeq, record.diameterMM, record.weightG, record.thicknessMM,
                record.channel.map { Int64($0) }, verdict, currency, denomination, value,
                record.link, reason, message, Int64(bitPattern: record.chainGeneration), state, detailJSON,
                record.alloy?.lowIACS, record.alloy?.highIACS, record.alloy?.permeability,
            ])
        guard db.changesCount == 1 else {
            // AUTOINCREMENT took the next seq before the conflict dropped the row; give it back,
            // or the ledger's seqs get a hole (FLEET.md: 1, 2, 3 … with no gap) that a bridge
            // steps past and a fleet waits on. Events are never deleted, so the highest seq on
            // the ledger is the last one given out.
            try db.cachedStatement(sql: "UPDATE sqlite_sequence SET seq = (SELECT max(seq) FROM events) WHERE name = 'events'").execute()
            let existing = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT seq, verdict, state FROM events WHERE kind = 'decision' AND source = ? AND epoch = ? AND device_seq = ?
                """), arguments: [record.source, record.epoch, deviceSeq])
            guard let existing else {
                throw LedgerInconsistency(message: "decision for \(record.source)/\(record.epoch)/\(record.deviceSeq) neither inserted nor found")
            }
            // `state` is NULL for a rejection: read as an optional.
            let state: String? = existing["state"]
            return .duplicate(seq: existing["seq"], accepted: existing["verdict"] == "accept", pending: state == "pending")
        }
        let seq = db.lastInsertedRowID
        try db.cachedStatement(sql: "INSERT INTO epochs (source, epoch) VALUES (?, ?) ON CONFLICT DO NOTHING").execute(arguments: [record.source, record.epoch])
        var recorded = LedgerEvent(
            seq: seq, time: record.time ?? time, kind: EventKind.decision.rawValue, source: record.source, epoch: record.epoch,
            deviceSeq: deviceSeq, diameterMM: record.diameterMM, weightG: record.weightG, thicknessMM: record.thicknessMM,
            channel: record.channel.map { Int64($0) }, verdict: verdict, currency: currency, denomination: denomination,
            valueMinor: value, link: record.link, reason: reason, message: message,
            chainGeneration: Int64(bitPattern: record.chainGeneration), detail: detailJSON, state: state)
        recorded.alloy = record.alloy
        guard record.verdict.isAccept, credit == .atOnce else { return .recorded([recorded]) }
        return .recorded([recorded, try insertSettlement(of: seq, .credited, message: nil)])
    }

    /// Settles a pending accept: flips its state (only from `pending`: at most once), records
    /// the settling event, and moves the totals for a credit.
    private func resolve(decisionSeq: Int64, _ resolution: Resolution, message: String?) throws -> EntryOutcome {
        try db.cachedStatement(sql: "UPDATE events SET state = ? WHERE seq = ? AND kind = 'decision' AND state = 'pending'")
            .execute(arguments: [resolution.rawValue, decisionSeq])
        guard db.changesCount == 1 else { return .alreadySettled }
        return .recorded([try insertSettlement(of: decisionSeq, resolution, message: message)])
    }

    /// Credits an unconfirmed coin the mech's journal says was stored: flips its state (only
    /// from `unconfirmed`: at most once; the unique index on (`ref_seq`, `kind`) holds it too)
    /// and records its `coin` event, moving the totals.
    private func lateCredit(decisionSeq: Int64, message: String) throws -> EntryOutcome {
        try db.cachedStatement(sql: "UPDATE events SET state = 'credited' WHERE seq = ? AND kind = 'decision' AND state = 'unconfirmed'")
            .execute(arguments: [decisionSeq])
        guard db.changesCount == 1 else { return .alreadySettled }
        return .recorded([try insertSettlement(of: decisionSeq, .credited, message: message)])
    }

    private static let settlementSQL = "SELECT \(LedgerQueries.eventColumns) FROM events WHERE seq = ?"

    private func insertSettlement(of decisionSeq: Int64, _ resolution: Resolution, message: String?) throws -> LedgerEvent {
        // The unique index on (ref_seq, kind) makes a second settlement of one kind for one
        // decision fail the transaction (a coin is credited once, even late).
        try db.cachedStatement(sql: """
            INSERT INTO events (time, kind, source, epoch, device_seq, diameter_mm, weight_g, thickness_mm, channel,
                                currency, denomination, value_minor, link, message, chain_generation, ref_seq, detail,
                                conductivity_low_iacs, conductivity_high_iacs, permeability)
            SELECT ?, ?, source, epoch, device_seq, diameter_mm, weight_g, thickness_mm, channel,
                   currency, denomination, value_minor, link, ?, chain_generation, seq, detail,
                   conductivity_low_iacs, conductivity_high_iacs, permeability
            FROM events WHERE seq = ?
            """).execute(arguments: [time, resolution.kind.rawValue, message, decisionSeq])
        guard db.changesCount == 1 else {
            throw LedgerInconsistency(message: "settlement of decision \(decisionSeq): the decision is not on the ledger")
        }
        // Cached too: preparing this statement cost more than the rest of the coin's path. A
        // constant, so that finding it in the cache builds no string. (Reading the event back
        // with RETURNING instead cost more instructions, not fewer: `coinmech-bench e2e --callgrind`.)
        guard let row = try Row.fetchOne(db.cachedStatement(sql: Self.settlementSQL), arguments: [db.lastInsertedRowID]) else {
            throw LedgerInconsistency(message: "settlement of decision \(decisionSeq) not found after insert")
        }
        let event = LedgerQueries.event(row)
        if resolution == .credited, let currency = event.currency, let denomination = event.denomination, let value = event.valueMinor {
            // Both periods in one statement: one execution, not two.
            let weight = event.weightG ?? 0
            try db.cachedStatement(sql: """
                INSERT INTO totals (period, currency, denomination, count, value_minor, weight_g)
                VALUES ('current', ?1, ?2, 1, ?3, ?4), ('lifetime', ?1, ?2, 1, ?3, ?4)
                ON CONFLICT (period, currency, denomination) DO UPDATE SET
                    count = count + 1, value_minor = value_minor + excluded.value_minor, weight_g = weight_g + excluded.weight_g
                """).execute(arguments: [currency, denomination, value, weight])
            if let source = event.source { try raiseCredit(source: source, currency: currency, valueMinor: value, coinSeq: event.seq) }
        }
        return event
    }

    private func insertNote(_ occurrence: Occurrence) throws -> LedgerEvent {
        let place = occurrence.place
        let (event, _) = try insertEvent(kind: occurrence.kind, source: occurrence.source, detail: occurrence.detail,
                                         epoch: place.epoch, deviceSeq: place.deviceSeq)
        if let source = occurrence.source, let (epoch, boot) = occurrence.epoch {
            try db.execute(sql: "INSERT INTO sources (source, epoch) VALUES (?, ?) ON CONFLICT (source) DO UPDATE SET epoch = excluded.epoch",
                           arguments: [source, epoch])
            try db.execute(sql: """
                INSERT INTO epochs (source, epoch, boot) VALUES (?, ?, ?)
                ON CONFLICT (source, epoch) DO UPDATE SET boot = COALESCE(excluded.boot, boot)
                """, arguments: [source, epoch, boot.map { Int64($0) }])
        }
        if let generation = occurrence.chainGeneration {
            try db.execute(sql: """
                INSERT INTO meta (key, value) VALUES ('chain_generation', ?)
                ON CONFLICT (key) DO UPDATE SET value = MAX(value, excluded.value)
                """, arguments: [Int64(bitPattern: generation)])
        }
        return event
    }

    func insertEvent(kind: EventKind, source: String?, detail: [String: String], epoch: Int64? = nil,
                             deviceSeq: Int64? = nil) throws -> (LedgerEvent, Int64) {
        let json = detail.isEmpty ? nil : try Self.json(detail)
        try db.cachedStatement(sql: "INSERT INTO events (time, kind, source, epoch, device_seq, detail) VALUES (?, ?, ?, ?, ?, ?)")
            .execute(arguments: [time, kind.rawValue, source, epoch, deviceSeq, json])
        let seq = db.lastInsertedRowID
        return (LedgerEvent(seq: seq, time: time, kind: kind.rawValue, source: source, epoch: epoch, deviceSeq: deviceSeq, detail: json), seq)
    }

    /// A detail object as stored: JSON, keys sorted.
    static func json(_ detail: [String: String]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: detail, options: [.sortedKeys]), as: UTF8.self)
    }

    /// Records the period's credited totals and unconfirmed coins as the collection's rows, then
    /// resets the current period.
    private func collect(by: String) throws -> LedgerEvent {
        let rows = try LedgerQueries.totalsRows(db, period: "current")
        let unconfirmed = try LedgerQueries.unconfirmedRows(db)
        var (event, seq) = try insertEvent(kind: .collect, source: nil, detail: ["by": by])
        for (state, list) in [("credited", rows), ("unconfirmed", unconfirmed)] {
            for row in list {
                try db.execute(sql: """
                    INSERT INTO collections (collect_seq, state, currency, denomination, count, value_minor, weight_g)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [seq, state, row.currency, row.denomination, row.count, row.valueMinor, row.weightG])
            }
        }
        try db.execute(sql: "DELETE FROM totals WHERE period = 'current'")
        event.collected = rows
        event.collectedUnconfirmed = unconfirmed
        return event
    }
}

/// The ledger found itself in a state its own writes cannot produce.
struct LedgerInconsistency: Error, CustomStringConvertible {
    let message: String
    var description: String { "ledger inconsistency: \(message)" }
}
