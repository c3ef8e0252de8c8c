import CoinMechChain
import CoinMechDaemon
import CoinMechFailpoints
@testable import CoinMechLedger
import CoinMechModel
import CoinMechPlugins
import CoinMechSerial
import CoinMechSources
@testable import CoinMechTestSupport
import Foundation
import GRDB
import Testing

/// The ledger's settlements on a real SQLite file.
@Suite("Ledger: pending coins, settlements once, duplicates, busy writers, migration")
struct LedgerSettlementTests {
    // Start-up with a million events took 250 ms more than with none: the pending coins were
    // found by reading every event, because SQLite uses a partial index only when the query
    // states the index's condition.
    @Test("the pending coins (every start) and their totals are read through the open coins' index, not a scan of every event", arguments: [
        (LedgerQueries.pendingCoins, "serial"),
        (LedgerQueries.openRowsSQL, "pending"),
    ])
    func openCoinsUseTheIndex(sql: String, argument: String) throws {
        let directory = TestSupport.temporaryDirectory("plan")
        _ = try Ledger(directory: directory)
        let plan = try DatabaseQueue(path: "\(directory)/\(Ledger.fileName)").read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN \(sql)", arguments: [argument]).map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("USING INDEX events_open") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN e") }, "\(plan)")
    }

    // The state CHECK as an IN list of four made SQLite build a temporary b-tree for every
    // insert and update of an event: a quarter of the instructions of a coin.
    @Test("writing an event's state builds no temporary b-tree, and the CHECK still refuses a state that does not exist")
    func stateCheckIsComparisons() throws {
        let directory = TestSupport.temporaryDirectory("check")
        let ledger = try Ledger(directory: directory)
        _ = try ledger.append([LedgerFixtures.quarter(1)])
        let queue = try DatabaseQueue(path: "\(directory)/\(Ledger.fileName)")
        for sql in ["UPDATE events SET state = 'credited' WHERE seq = 1",
                    "INSERT INTO events (time, kind, state) VALUES (1, 'decision', 'pending')"] {
            let program = try queue.read { db in try Row.fetchAll(db, sql: "EXPLAIN \(sql)").map { $0["opcode"] as String } }
            #expect(!program.contains("OpenEphemeral"), "\(sql) opens a temporary b-tree")
        }
        #expect(throws: DatabaseError.self) { try queue.write { db in try db.execute(sql: "UPDATE events SET state = 'paid' WHERE seq = 1") } }
        try queue.write { db in try db.execute(sql: "UPDATE events SET state = 'returned' WHERE seq = 1") }
        #expect(try queue.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
    }

    @Test("an accept is pending and moves no totals; a credit moves them once; a second settlement records nothing")
    func settleOnce() throws {
        let ledger = try Ledger(directory: TestSupport.temporaryDirectory("ledger"))
        let decided = try ledger.append([LedgerFixtures.quarter(1)])
        guard case .recorded(let events) = decided.outcomes[0] else { Issue.record("not recorded"); return }
        #expect(events.first?.state == "pending")
        #expect(try ledger.totals().current.isEmpty)
        #expect(try ledger.totals().pending.first?.count == 1)
        let seq = events[0].seq
        let credit = try ledger.append([.resolve(decisionSeq: seq, .credited, message: "stored")])
        #expect(credit.events.map(\.kind) == ["coin"])
        #expect(credit.events.first?.refSeq == seq)
        #expect(try ledger.append([.resolve(decisionSeq: seq, .credited)]).outcomes == [.alreadySettled])
        #expect(try ledger.append([.resolve(decisionSeq: seq, .returned)]).outcomes == [.alreadySettled])
        #expect(Totals.value(of: try ledger.totals().current) == ["USD": 25])
        #expect(Totals.value(of: try ledger.totals().lifetime) == ["USD": 25])
        #expect(try ledger.totals().pending.isEmpty)
        #expect(try ledger.pendingCoins(source: "serial").isEmpty)
        // A second coin of the denomination adds to both periods' rows.
        let second = try ledger.append([LedgerFixtures.quarter(2)])
        guard case .recorded(let more) = second.outcomes[0] else { Issue.record("not recorded"); return }
        try ledger.append([.resolve(decisionSeq: more[0].seq, .credited, message: "stored")])
        for period in [try ledger.totals().current, try ledger.totals().lifetime] {
            #expect(period.map(\.count) == [2])
            #expect(Totals.value(of: period) == ["USD": 50])
        }
    }

    // `unconfirmed` was final: a journal answer "stored" that came later was dropped, and a coin
    // that reached the cash box stayed out of the customer's credit.
    @Test("late evidence: an unconfirmed coin the mech's journal says was stored is credited once, beside its coin_unconfirmed")
    func lateCreditOnce() throws {
        let ledger = try Ledger(directory: TestSupport.temporaryDirectory("late"))
        try ledger.append([.note(.mechSession(source: "serial", epoch: 1, boot: 4))])
        let decided = try ledger.append([LedgerFixtures.quarter(1)])
        guard case .recorded(let events) = decided.outcomes[0] else { Issue.record("not recorded"); return }
        let seq = events[0].seq
        try ledger.append([.resolve(decisionSeq: seq, .unconfirmed, message: "the mech answered none of 5 queries about it")])
        #expect(try ledger.totals().current.isEmpty)
        #expect(try ledger.unconfirmedCoins(source: "serial").map(\.seq) == [seq])
        let late = try ledger.append([.lateCredit(decisionSeq: seq, message: "stored (the mech's journal, after the coin was listed unconfirmed)")])
        #expect(late.events.map(\.kind) == ["coin"])
        #expect(late.events.first?.refSeq == seq)
        #expect(Totals.value(of: try ledger.totals().current) == ["USD": 25])
        // Once only, whatever comes after.
        #expect(try ledger.append([.lateCredit(decisionSeq: seq, message: "again")]).outcomes == [.alreadySettled])
        #expect(try ledger.append([.resolve(decisionSeq: seq, .credited)]).outcomes == [.alreadySettled])
        #expect(Totals.value(of: try ledger.totals().current) == ["USD": 25])
        #expect(try ledger.unconfirmedCoins(source: "serial").isEmpty)
        let all = try ledger.events(since: 0, limit: 100)
        #expect(all.filter { $0.refSeq == seq }.map(\.kind) == ["coin_unconfirmed", "coin"])
        #expect(all.first { $0.seq == seq }?.state == "credited")
        // A pending coin is not credited late: only an unconfirmed one.
        let other = try ledger.append([LedgerFixtures.quarter(2)])
        guard case .recorded(let second) = other.outcomes[0] else { Issue.record("not recorded"); return }
        #expect(try ledger.append([.lateCredit(decisionSeq: second[0].seq, message: "no")]).outcomes == [.alreadySettled])
    }

    @Test("a decision for a coin already on the ledger is a duplicate, not a disk failure; the rest of the batch is kept")
    func duplicateIsNotAFailure() throws {
        let ledger = try Ledger(directory: TestSupport.temporaryDirectory("ledger"))
        try ledger.append([LedgerFixtures.quarter(1)])
        let again = try ledger.append([LedgerFixtures.quarter(1), LedgerFixtures.quarter(2), .note(.inhibit(source: "serial", on: true, by: "root"))])
        guard case .duplicate(_, let accepted, let pending) = again.outcomes[0] else { Issue.record("\(again.outcomes[0])"); return }
        #expect(accepted && pending, "an accept still pending on the ledger")
        #expect(again.events.map(\.kind) == ["decision", "inhibit"])
        #expect(try ledger.events(since: 0).filter { $0.kind == "decision" }.count == 2)
        // A rejection has no state; a settled accept is no longer pending.
        var slug = DecisionRecord(source: "serial", epoch: 1, deviceSeq: 3, diameterMM: 20, weightG: 1, thicknessMM: nil, channel: nil,
                                  verdict: .reject(reason: "slug", message: "too light"), link: "usd", chainGeneration: 1)
        try ledger.append([.decision(slug, credit: .onConfirmation)])
        slug.link = "again"
        let seq = try #require(again.events.first?.seq)
        try ledger.append([.resolve(decisionSeq: seq, .credited, message: nil)])
        let third = try ledger.append([.decision(slug, credit: .onConfirmation), LedgerFixtures.quarter(2)])
        #expect(third.outcomes.map { if case .duplicate(_, let accepted, let pending) = $0 { return "\(accepted) \(pending)" } else { return "\($0)" } }
            == ["false false", "true false"])
    }

    // SQLite's AUTOINCREMENT takes the next seq before `ON CONFLICT DO NOTHING` drops the row:
    // every duplicate left a hole, and a replay of 496 duplicates left one the fleet bridge
    // stepped past and its consumer waited on (`coinmech-bridge-chaos --seed 63997`).
    @Test("duplicate decisions take no seq: the events stay numbered 1, 2, 3 … without a hole")
    func duplicatesLeaveNoHole() throws {
        let ledger = try Ledger(directory: TestSupport.temporaryDirectory("ledger"))
        try ledger.append([LedgerFixtures.quarter(1)])
        for _ in 0..<3 { try ledger.append([LedgerFixtures.quarter(1)]) }
        try ledger.append([LedgerFixtures.quarter(1), LedgerFixtures.quarter(2), .note(.inhibit(source: "serial", on: true, by: "root"))])
        let seqs = try ledger.events(since: 0).map(\.seq)
        #expect(seqs == Array(1...Int64(seqs.count)), "\(seqs)")
        let kept = try ledger.read { db in try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'events'") }
        #expect(kept == seqs.last)
    }

    @Test("a writer holding the database past the budget is 'busy', and the budget is what the deadline leaves")
    func busy() throws {
        let dir = TestSupport.temporaryDirectory("ledger")
        let ledger = try Ledger(directory: dir)
        let other = try LedgerFixtures.holdWriteLock(directory: dir)
        let start = Date()
        #expect(throws: LedgerError.self) {
            do {
                try ledger.append([LedgerFixtures.quarter(1)], busyTimeoutMilliseconds: 30)
            } catch let error as LedgerError {
                guard case .busy = error else { Issue.record("expected busy, got \(error)"); throw error }
                throw error
            }
        }
        #expect(Date().timeIntervalSince(start) < 2, "waited far longer than its 30 ms budget")
        try other.inDatabase { try $0.execute(sql: "ROLLBACK") }
        #expect(try ledger.append([LedgerFixtures.quarter(1)], busyTimeoutMilliseconds: 30).events.count == 1)
    }

    @Test("a version 1 ledger is migrated: its accepts were credit, its generation is kept")
    func migration() throws {
        let dir = TestSupport.temporaryDirectory("ledger")
        let old = try DatabaseQueue(path: "\(dir)/\(Ledger.fileName)")
        try old.write { db in
            try db.execute(sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1');
                CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL, kind TEXT NOT NULL, source TEXT,
                    epoch INTEGER, device_seq INTEGER, diameter_mm REAL, weight_g REAL, thickness_mm REAL, channel INTEGER,
                    verdict TEXT CHECK (verdict IN ('accept', 'reject')), currency TEXT, denomination TEXT, value_minor INTEGER,
                    link TEXT, reason TEXT, message TEXT, chain_generation INTEGER, detail TEXT);
                CREATE UNIQUE INDEX events_reading ON events(source, epoch, device_seq) WHERE kind = 'decision';
                CREATE INDEX events_kind ON events(kind, seq);
                CREATE TABLE totals (period TEXT NOT NULL, currency TEXT NOT NULL, denomination TEXT NOT NULL, count INTEGER NOT NULL,
                    value_minor INTEGER NOT NULL, weight_g REAL NOT NULL, PRIMARY KEY (period, currency, denomination)) WITHOUT ROWID;
                CREATE TABLE sources (source TEXT PRIMARY KEY, epoch INTEGER NOT NULL) WITHOUT ROWID;
                INSERT INTO events (time, kind, detail) VALUES (1, 'startup', '{"chain_generation":"4"}');
                INSERT INTO events (time, kind, source, epoch, device_seq, verdict, currency, denomination, value_minor, chain_generation)
                    VALUES (2, 'decision', 'serial', 1, 1, 'accept', 'USD', 'quarter', 25, 4);
                INSERT INTO events (time, kind, detail) VALUES (3, 'reload', '{"generation":"7"}');
                INSERT INTO events (time, kind, detail) VALUES (4, 'collect',
                    '{"by":"root","collected":"[{\\"count\\":1,\\"currency\\":\\"USD\\",\\"denomination\\":\\"quarter\\",\\"value_minor\\":25,\\"weight_g\\":5.67}]"}');
                INSERT INTO sources VALUES ('serial', 1);
                """)
        }
        let ledger = try Ledger(directory: dir)
        #expect(try ledger.chainGeneration() == 7)
        #expect(try ledger.events(since: 0).first { $0.kind == "decision" }?.state == "credited")
        #expect(try ledger.pendingCoins(source: "serial").isEmpty)
        #expect(try ledger.sourceState("serial").epoch == 1)
        // The collection's rows moved out of the detail into their own table.
        let collect = try #require(try ledger.events(since: 0).first { $0.kind == "collect" })
        #expect(collect.detail == #"{"by":"root"}"#)
        #expect(collect.collected == [TotalsRow(currency: "USD", denomination: "quarter", count: 1, valueMinor: 25, weightG: 5.67)])
        #expect(collect.collectedUnconfirmed == [])
        // The state CHECK was rewritten in place, and still holds.
        let queue = try DatabaseQueue(path: "\(dir)/\(Ledger.fileName)")
        let schema = try queue.read { db in try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE name = 'events'") }
        #expect(schema?.contains("CHECK (state = 'pending' OR state = 'credited'") == true)
        #expect(throws: DatabaseError.self) { try queue.write { db in try db.execute(sql: "UPDATE events SET state = 'paid' WHERE kind = 'decision'") } }
        #expect(try queue.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
    }
}
