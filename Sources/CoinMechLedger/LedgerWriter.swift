import CoinMechChain
import Foundation
import GRDB

/// Records entries inside one `append` transaction.
struct LedgerWriter {
    let db: Database
    let time: Double

    mutating func record(_ entry: LedgerEntry) throws -> EntryOutcome {
        switch entry {
        case .decision(let source, let epoch, let reading, let decision, let credit):
            return try insertDecision(source: source, epoch: epoch, reading: reading, decision: decision, credit: credit)
        case .resolve(let decisionSeq, let resolution, let message):
            return try resolve(decisionSeq: decisionSeq, resolution, message: message)
        case .event(let kind, let source, let detail):
            return .recorded([try insertEvent(kind: kind, source: source, detail: detail)])
        case .collect(let by):
            return .recorded([try collect(by: by)])
        }
    }

    private func insertDecision(source: String, epoch: Int64, reading: Reading, decision: Decision, credit: CreditRule) throws -> EntryOutcome {
        let verdict = decision.verdict
        var currency: String?, denomination: String?, value: Int64?, reason: String?, message: String?, state: String?
        switch verdict {
        case .accept(let d):
            (currency, denomination, value) = (d.currency, d.code, d.valueMinor)
            state = credit == .atOnce ? Resolution.credited.rawValue : "pending"
        case .reject(let r):
            (reason, message) = (r.reason, r.message)
        }
        // Cached statements: compiled once per connection, not per coin. A coin already on the
        // ledger (same source, epoch, device seq) conflicts with `events_reading` and is skipped.
        try db.cachedStatement(sql: """
            INSERT INTO events (time, kind, source, epoch, device_seq, diameter_mm, weight_g, thickness_mm, channel,
                                verdict, currency, denomination, value_minor, link, reason, message, chain_generation, state)
            VALUES (?, 'decision', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT DO NOTHING
            """).execute(arguments: [
                time, source, epoch, Int64(bitPattern: reading.deviceSeq), reading.diameterMM, reading.weightG, reading.thicknessMM,
                reading.channel.map { Int64($0) }, verdict.isAccept ? "accept" : "reject", currency, denomination, value,
                decision.linkName, reason, message, Int64(bitPattern: decision.chainGeneration), state,
            ])
        guard db.changesCount == 1 else {
            let existing = try Row.fetchOne(db, sql: """
                SELECT seq, verdict FROM events WHERE kind = 'decision' AND source = ? AND epoch = ? AND device_seq = ?
                """, arguments: [source, epoch, Int64(bitPattern: reading.deviceSeq)])
            guard let existing else { throw LedgerInconsistency(message: "decision for \(source)/\(epoch)/\(reading.deviceSeq) neither inserted nor found") }
            return .duplicate(seq: existing["seq"], accepted: existing["verdict"] == "accept")
        }
        let seq = db.lastInsertedRowID
        try db.cachedStatement(sql: "INSERT INTO epochs (source, epoch) VALUES (?, ?) ON CONFLICT DO NOTHING").execute(arguments: [source, epoch])
        let recorded = LedgerEvent(
            seq: seq, time: time, kind: EventKind.decision.rawValue, source: source, epoch: epoch,
            deviceSeq: Int64(bitPattern: reading.deviceSeq), diameterMM: reading.diameterMM, weightG: reading.weightG,
            thicknessMM: reading.thicknessMM, channel: reading.channel.map { Int64($0) }, verdict: verdict.isAccept ? "accept" : "reject",
            currency: currency, denomination: denomination, valueMinor: value, link: decision.linkName, reason: reason,
            message: message, chainGeneration: Int64(bitPattern: decision.chainGeneration), state: state)
        guard verdict.isAccept, credit == .atOnce else { return .recorded([recorded]) }
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

    private func insertSettlement(of decisionSeq: Int64, _ resolution: Resolution, message: String?) throws -> LedgerEvent {
        // The unique index on ref_seq makes a second settlement of one decision fail the transaction.
        try db.cachedStatement(sql: """
            INSERT INTO events (time, kind, source, epoch, device_seq, diameter_mm, weight_g, thickness_mm, channel,
                                currency, denomination, value_minor, link, message, chain_generation, ref_seq)
            SELECT ?, ?, source, epoch, device_seq, diameter_mm, weight_g, thickness_mm, channel,
                   currency, denomination, value_minor, link, ?, chain_generation, seq
            FROM events WHERE seq = ?
            """).execute(arguments: [time, resolution.kind.rawValue, message, decisionSeq])
        let seq = db.lastInsertedRowID
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM events WHERE seq = ?", arguments: [seq]) else {
            throw LedgerInconsistency(message: "settlement of decision \(decisionSeq) not found after insert")
        }
        let event = LedgerQueries.event(row)
        if resolution == .credited, let currency = event.currency, let denomination = event.denomination, let value = event.valueMinor {
            for period in ["current", "lifetime"] {
                try db.cachedStatement(sql: """
                    INSERT INTO totals (period, currency, denomination, count, value_minor, weight_g) VALUES (?, ?, ?, 1, ?, ?)
                    ON CONFLICT (period, currency, denomination) DO UPDATE SET
                        count = count + 1, value_minor = value_minor + excluded.value_minor, weight_g = weight_g + excluded.weight_g
                    """).execute(arguments: [period, currency, denomination, value, event.weightG ?? 0])
            }
        }
        return event
    }

    private func insertEvent(kind: EventKind, source: String?, detail: [String: String]) throws -> LedgerEvent {
        let json = detail.isEmpty ? nil : String(decoding: try JSONSerialization.data(withJSONObject: detail, options: [.sortedKeys]), as: UTF8.self)
        let movesEpoch = kind == .mechPowerUp || kind == .mechSession
        let epoch = movesEpoch ? detail["epoch"].flatMap { Int64($0) } : nil
        try db.execute(sql: "INSERT INTO events (time, kind, source, epoch, detail) VALUES (?, ?, ?, ?, ?)",
                       arguments: [time, kind.rawValue, source, epoch, json])
        let seq = db.lastInsertedRowID
        if let source, let epoch {
            try db.execute(sql: "INSERT INTO sources (source, epoch) VALUES (?, ?) ON CONFLICT (source) DO UPDATE SET epoch = excluded.epoch",
                           arguments: [source, epoch])
            let boot = detail["boot"].flatMap { Int64($0) }
            try db.execute(sql: """
                INSERT INTO epochs (source, epoch, boot) VALUES (?, ?, ?)
                ON CONFLICT (source, epoch) DO UPDATE SET boot = COALESCE(excluded.boot, boot)
                """, arguments: [source, epoch, boot])
        }
        if kind == .startup || kind == .reload, let generation = (detail["chain_generation"] ?? detail["generation"]).flatMap({ Int64($0) }) {
            try db.execute(sql: """
                INSERT INTO meta (key, value) VALUES ('chain_generation', ?)
                ON CONFLICT (key) DO UPDATE SET value = MAX(value, excluded.value)
                """, arguments: [generation])
        }
        return LedgerEvent(seq: seq, time: time, kind: kind.rawValue, source: source, epoch: epoch, detail: json)
    }

    private func collect(by: String) throws -> LedgerEvent {
        let rows = try LedgerQueries.totalsRows(db, period: "current")
        let unconfirmed = try LedgerQueries.unconfirmedRows(db)
        var detail = ["by": by, "collected": String(decoding: try JSONEncoder.sorted.encode(rows), as: UTF8.self)]
        if !unconfirmed.isEmpty { detail["unconfirmed"] = String(decoding: try JSONEncoder.sorted.encode(unconfirmed), as: UTF8.self) }
        let event = try insertEvent(kind: .collect, source: nil, detail: detail)
        try db.execute(sql: "DELETE FROM totals WHERE period = 'current'")
        return event
    }
}

/// The ledger found itself in a state its own writes cannot produce.
struct LedgerInconsistency: Error, CustomStringConvertible {
    let message: String
    var description: String { "ledger inconsistency: \(message)" }
}
