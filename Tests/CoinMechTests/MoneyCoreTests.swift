import CoinMechChain
import CoinMechDaemon
import CoinMechFailpoints
@testable import CoinMechLedger
import CoinMechPlugins
import CoinMechSerial
import CoinMechSources
import Foundation
import GRDB
import Testing

/// The pieces of the money path that decide without I/O: when to ask the mech, which session a
/// coin belongs to, which answers can still reach the mech, when a reading left it.
@Suite("Money path policies: pending coins, epochs and boots, answer plans, the mech's clock, failpoints")
struct MoneyPolicyTests {
    let ms: UInt64 = 1_000_000

    @Test("a pending coin is settled by the mech's word: stored credits, returned returns, unknown is unconfirmed")
    func settlements() {
        var pending = PendingCoins(confirmationWindowNanoseconds: 300 * ms)
        pending.add(seq: 10, epoch: 1, deviceSeq: 5, answeredAt: 0)
        pending.add(seq: 11, epoch: 1, deviceSeq: 6, answeredAt: 0)
        #expect(pending.settle(epoch: 1, deviceSeq: 5, fate: .stored, fromJournal: false)?.resolution == .credited)
        #expect(pending.settle(epoch: 1, deviceSeq: 6, fate: .returned, fromJournal: true)?.resolution == .returned)
        #expect(pending.settle(epoch: 1, deviceSeq: 6, fate: .unknown, fromJournal: true)?.resolution == .unconfirmed)
        #expect(pending.settle(epoch: 2, deviceSeq: 5, fate: .stored, fromJournal: false) == nil, "another epoch's coin 5")
        // Nothing leaves the set until its settlement committed.
        #expect(pending.count == 2)
        pending.settled([pending.settle(epoch: 1, deviceSeq: 5, fate: .stored, fromJournal: false)!])
        #expect(pending.count == 1)
        #expect(pending.settle(epoch: 1, deviceSeq: 5, fate: .stored, fromJournal: false) == nil, "settled once")
    }

    @Test("no confirmation within the window: the mech is asked, again each window, and given up on after 5 unanswered queries")
    func queries() {
        var pending = PendingCoins(confirmationWindowNanoseconds: 300 * ms, maximumUnansweredQueries: 5)
        pending.add(seq: 10, epoch: 1, deviceSeq: 5, answeredAt: 1000 * ms)
        #expect(pending.due(now: 1299 * ms).isEmpty)
        #expect(pending.nextDue == 1300 * ms)
        var now = 1300 * ms
        for _ in 1...5 {
            let due = pending.due(now: now)
            #expect(due.count == 1)
            #expect(pending.queried(due[0], now: now) == nil)
            #expect(pending.due(now: now).isEmpty)
            now += 300 * ms
        }
        let giveUp = pending.queried(pending.due(now: now)[0], now: now)
        #expect(giveUp?.resolution == .unconfirmed)
        #expect(giveUp?.message == "the mech answered none of 5 queries about it")
        // A coin restored after a restart is asked about at once, once the session is known.
        var restored = PendingCoins()
        restored.add(seq: 3, epoch: 1, deviceSeq: 2, answeredAt: 50 * ms, restored: true)
        #expect(restored.due(now: 50 * ms).count == 1)
        // A coin of an epoch without a boot number can never be asked about.
        #expect(restored.unaskable(knownBoots: [:]).map(\.resolution) == [.unconfirmed])
        #expect(restored.unaskable(knownBoots: [1: 7]).isEmpty)
    }

    @Test("epochs and boots: the same session, a first boot number, a power-up while nobody listened")
    func epochBook() {
        var book = EpochBook()
        #expect(book.session(3, currentEpoch: 1) == .assigned)
        book.record(epoch: 1, boot: 3)
        #expect(book.session(3, currentEpoch: 1) == .same)
        #expect(book.session(4, currentEpoch: 1) == .newEpoch)
        book.record(epoch: 2, boot: 4)
        #expect(book.epoch(ofBoot: 3) == 1)
        #expect(book.epoch(ofBoot: 4) == 2)
        #expect(book.epoch(ofBoot: 5) == nil)
        book.record(epoch: 3, boot: nil)
        #expect(book.boots[3] == nil)
    }

    @Test("answers queue on the line: accepts first, oldest first; an accept that cannot arrive in time is withdrawn")
    func answerPlan() {
        let deadline = AnswerDeadline(deadlineMilliseconds: 50, commitAllowanceMilliseconds: 10)
        let transit = 18_750_000  // 18 bytes at 9600 baud
        // Three readings that left the mech 0, 5 and 10 ms ago, decided now: accept, reject, accept.
        let now = 100 * ms
        let plan = AnswerPlan([
            .init(index: 0, accept: true, sentAt: now - 10 * ms, transit: UInt64(transit)),
            .init(index: 1, accept: false, sentAt: now - 5 * ms, transit: UInt64(transit)),
            .init(index: 2, accept: true, sentAt: now, transit: UInt64(transit)),
        ], now: now, deadline: deadline)
        #expect(plan.order.map(\.index) == [0, 2, 1])
        // First accept arrives at now + 10 + 18.75 = 28.75 ms after now: 38.75 after it left: in time.
        // Second at 47.5 after now, 47.5 after it left: in time. The return goes last.
        #expect(plan.withdrawn.isEmpty)
        // The same three readings 20 ms older: the first accept would arrive 58.75 ms after it left.
        let late = AnswerPlan([
            .init(index: 0, accept: true, sentAt: now - 30 * ms, transit: UInt64(transit)),
            .init(index: 1, accept: false, sentAt: now - 25 * ms, transit: UInt64(transit)),
            .init(index: 2, accept: true, sentAt: now - 20 * ms, transit: UInt64(transit)),
        ], now: now, deadline: deadline)
        #expect(late.withdrawn == [0, 2])
        #expect(late.order.allSatisfy { !$0.accept })
        // Without a deadline (a GPIO mech) nothing is withdrawn.
        #expect(AnswerPlan([.init(index: 0, accept: true, sentAt: 0, transit: 0)], now: 10_000 * ms, deadline: nil).withdrawn.isEmpty)
        // The commit may wait for the database only as long as the earliest accept allows.
        #expect(plan.commitBudgetMilliseconds(now: now, deadline: deadline) == 12)
    }

    @Test("the mech's clock shows a reading that waited in a buffer for what it is, and follows a drifting crystal")
    func mechClock() {
        var clock = MechClock()
        let origin: UInt64 = 5_000_000 * ms
        // Readings every 100 ms, read 1 ms after they were sent.
        for index in 0..<10 {
            let sent = origin + UInt64(index) * 100 * ms
            #expect(clock.sentAt(mechMilliseconds: 1000 + UInt64(index) * 100, readAt: sent + ms) == origin + ms + UInt64(index) * 100 * ms)
        }
        // The daemon was paused: a reading sent 900 ms ago is read now.
        let now = origin + 2000 * ms
        let sent = clock.sentAt(mechMilliseconds: 1000 + 1100, readAt: now)
        #expect(sent >= origin + 1101 * ms && sent <= origin + 1102 * ms, "sent \(Double(Int64(bitPattern: sent &- origin)) / 1e6) ms after the origin")
        // A mech clock running 100 ppm slow: the offset creeps up with it, no reading looks late.
        var drifting = MechClock()
        var mechMs: UInt64 = 0
        var host = origin
        for _ in 0..<600 {
            host += 100 * ms
            mechMs += 100
            let read = host + UInt64(Double(host - origin) * 100e-6)  // the host sees the mech fall behind
            let sent = drifting.sentAt(mechMilliseconds: mechMs, readAt: read)
            #expect(read - sent <= 2 * ms)
        }
        // A mech whose clock restarted (power-up) starts the estimate again.
        #expect(drifting.sentAt(mechMilliseconds: 10, readAt: host + 100 * ms) == host + 100 * ms)
    }

    @Test("failpoints parse from the environment's syntax; errors name what is wrong")
    func failpointsParse() throws {
        let points = try Failpoints.parse("after-commit=kill@3, answer-written=sleep:20,published=off")
        #expect(points.isArmed)
        #expect(points.description == "after-commit, answer-written")
        #expect(!(try Failpoints.parse("")).isArmed)
        for bad in ["after-comit=kill", "after-commit=explode", "after-commit=kill@0", "after-commit=sleep:x", "after-commit"] {
            #expect(throws: Failpoints.ParseError.self) { try Failpoints.parse(bad) }
        }
        // A sleep failpoint really stalls, on the hit it names.
        let sleepy = try Failpoints.parse("published=sleep:50@2")
        let start = Date()
        sleepy.hit(.published)
        sleepy.hit(.published)
        #expect(Date().timeIntervalSince(start) >= 0.05)
    }
}

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

    func accept(_ seq: UInt64, epoch: Int64 = 1) throws -> LedgerEntry {
        let chain = try TestSupport.chain([LinkSpec(name: "usd", plugin: "coin-table", configJSON: #"{"currency":"USD"}"#)])
        return .decision(source: "serial", epoch: epoch, reading: .coin(24.26, 5.67, seq: seq), decision: chain.decide(.coin(24.26, 5.67, seq: seq)),
                         credit: .onConfirmation)
    }

    @Test("an accept is pending and moves no totals; a credit moves them once; a second settlement records nothing")
    func settleOnce() throws {
        let ledger = try Ledger(directory: TestSupport.temporaryDirectory("ledger"))
        let decided = try ledger.append([try accept(1)])
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
        #expect(try ledger.totals().pending.isEmpty)
        #expect(try ledger.pendingCoins(source: "serial").isEmpty)
    }

    @Test("a decision for a coin already on the ledger is a duplicate, not a disk failure; the rest of the batch is kept")
    func duplicateIsNotAFailure() throws {
        let ledger = try Ledger(directory: TestSupport.temporaryDirectory("ledger"))
        try ledger.append([try accept(1)])
        let again = try ledger.append([try accept(1), try accept(2), .event(.inhibit, source: "serial", detail: ["on": "true"])])
        guard case .duplicate(_, let accepted) = again.outcomes[0] else { Issue.record("\(again.outcomes[0])"); return }
        #expect(accepted)
        #expect(again.events.map(\.kind) == ["decision", "inhibit"])
        #expect(try ledger.events(since: 0).filter { $0.kind == "decision" }.count == 2)
    }

    @Test("a writer holding the database past the budget is 'busy', and the budget is what the deadline leaves")
    func busy() throws {
        let dir = TestSupport.temporaryDirectory("ledger")
        let ledger = try Ledger(directory: dir)
        // Another writer (an operator's sqlite3 shell, say) holds the write lock.
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: "\(dir)/\(Ledger.fileName)", configuration: configuration)
        try other.inDatabase { try $0.execute(sql: "BEGIN IMMEDIATE") }
        let start = Date()
        #expect(throws: LedgerError.self) {
            do {
                try ledger.append([try accept(1)], busyTimeoutMilliseconds: 30)
            } catch let error as LedgerError {
                guard case .busy = error else { Issue.record("expected busy, got \(error)"); throw error }
                throw error
            }
        }
        #expect(Date().timeIntervalSince(start) < 2, "waited far longer than its 30 ms budget")
        try other.inDatabase { try $0.execute(sql: "ROLLBACK") }
        #expect(try ledger.append([try accept(1)], busyTimeoutMilliseconds: 30).events.count == 1)
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
                INSERT INTO sources VALUES ('serial', 1);
                """)
        }
        let ledger = try Ledger(directory: dir)
        #expect(try ledger.chainGeneration() == 7)
        #expect(try ledger.events(since: 0).first { $0.kind == "decision" }?.state == "credited")
        #expect(try ledger.pendingCoins(source: "serial").isEmpty)
        #expect(try ledger.sourceState("serial").epoch == 1)
    }
}
