import CoinMechCore
import CoinMechFailpoints
import CoinMechModel
import CoinMechSerial
import CoinMechSources
import Foundation
import Testing

/// Milliseconds after an arbitrary origin, as an instant.
func at(_ milliseconds: Int) -> Instant { Instant(nanoseconds: 5_000_000_000_000 + UInt64(milliseconds) * 1_000_000) }

/// The pieces of the money path that decide without I/O: when to ask the mech, which session a
/// coin belongs to, which answers can still reach the mech, when a reading left it.
@Suite("Money path policies: pending coins, epochs and boots, answer plans, the mech's clock, failpoints")
struct PolicyTests {
    @Test("a pending coin is settled by the mech's word: stored credits, returned returns, unknown is unconfirmed")
    func settlements() {
        var pending = PendingCoins(confirmationWindow: .milliseconds(300))
        pending.add(seq: 10, epoch: 1, deviceSeq: 5, answeredAt: at(0))
        pending.add(seq: 11, epoch: 1, deviceSeq: 6, answeredAt: at(0))
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

    @Test("late evidence: a coin given up on is asked again after the next connect, and the journal's 'stored' credits it once; a journal 'unknown' is not asked again")
    func lateEvidence() {
        var pending = PendingCoins(confirmationWindow: .milliseconds(300), maximumUnansweredQueries: 1)
        pending.add(seq: 10, epoch: 1, deviceSeq: 5, answeredAt: at(0))
        pending.add(seq: 11, epoch: 1, deviceSeq: 6, answeredAt: at(0))
        var coin = pending.due(now: at(300)).first { $0.seq == 10 }!
        #expect(pending.queried(coin, now: at(300)) == nil)
        coin = pending.due(now: at(600)).first { $0.seq == 10 }!
        let gaveUp = pending.queried(coin, now: at(600))!
        #expect(gaveUp.resolution == .unconfirmed && gaveUp.askAgain)
        let unknown = pending.settle(epoch: 1, deviceSeq: 6, fate: .unknown, fromJournal: true)!
        #expect(!unknown.askAgain)
        pending.settled([gaveUp, unknown])
        #expect(pending.isEmpty && pending.unconfirmedCount == 1)
        #expect(pending.due(now: at(5_000)).isEmpty, "not asked again until the next connect")
        pending.askAllNow(at(6_000))
        #expect(pending.due(now: at(6_000)).map(\.seq) == [10], "the journal's 'unknown' is final")
        #expect(pending.queried(pending.due(now: at(6_000))[0], now: at(6_000)) == nil, "never given up on twice")
        #expect(pending.due(now: at(9_000)).isEmpty, "asked once per connect")
        #expect(pending.settle(epoch: 1, deviceSeq: 5, fate: .returned, fromJournal: true) == nil, "only 'stored' changes an unconfirmed coin")
        let late = pending.settle(epoch: 1, deviceSeq: 5, fate: .stored, fromJournal: true)!
        #expect(late.late && late.resolution == .credited)
        pending.settled([late])
        #expect(pending.unconfirmedCount == 0)
        #expect(pending.settle(epoch: 1, deviceSeq: 5, fate: .stored, fromJournal: true) == nil, "credited once")
    }

    @Test("no confirmation within the window: the mech is asked, again each window, and given up on after 5 unanswered queries")
    func queries() {
        var pending = PendingCoins(confirmationWindow: .milliseconds(300), maximumUnansweredQueries: 5)
        pending.add(seq: 10, epoch: 1, deviceSeq: 5, answeredAt: at(1000))
        #expect(pending.due(now: at(1299)).isEmpty)
        #expect(pending.nextDue == at(1300))
        var now = 1300
        for _ in 1...5 {
            let due = pending.due(now: at(now))
            #expect(due.count == 1)
            #expect(pending.queried(due[0], now: at(now)) == nil)
            #expect(pending.due(now: at(now)).isEmpty)
            now += 300
        }
        let giveUp = pending.queried(pending.due(now: at(now))[0], now: at(now))
        #expect(giveUp?.resolution == .unconfirmed)
        #expect(giveUp?.message == "the mech answered none of 5 queries about it")
        // A coin restored after a restart is asked about at once, once the session is known.
        var restored = PendingCoins()
        restored.add(seq: 3, epoch: 1, deviceSeq: 2, answeredAt: at(50), restored: true)
        #expect(restored.due(now: at(50)).count == 1)
        // A coin of an epoch without a boot number can never be asked about.
        #expect(restored.unaskable(epochs: EpochBook()).map(\.askAgain) == [true])
        #expect(restored.unaskable(epochs: EpochBook(boots: [1: 7])).isEmpty)
        // Nor by a boot number a later session named again; and never again after that.
        #expect(restored.unaskable(epochs: EpochBook(boots: [1: 7, 2: 8, 3: 7])).map(\.askAgain) == [false])
        #expect(restored.unaskable(epochs: EpochBook(boots: [1: 7, 2: 8, 3: 7])).map(\.resolution) == [.unconfirmed])
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
        let transit = Duration.microseconds(18_750)  // 18 bytes at 9600 baud
        // Three readings that left the mech 10, 5 and 0 ms ago, decided now: accept, reject, accept.
        let plan = AnswerPlan([
            .init(index: 0, accept: true, sentAt: at(90), transit: transit),
            .init(index: 1, accept: false, sentAt: at(95), transit: transit),
            .init(index: 2, accept: true, sentAt: at(100), transit: transit),
        ], now: at(100), deadline: deadline)
        #expect(plan.order.map(\.index) == [0, 2, 1])
        // The first accept arrives 10 + 18.75 ms after now, 38.75 after it left: in time. The
        // second 47.5 ms after now and after it left: in time. The return goes last.
        #expect(plan.withdrawn.isEmpty)
        // The same readings 20 ms older: the first accept would arrive 58.75 ms after it left, so
        // it is withdrawn and goes to the back; the second takes its place and is in time
        // (128.75 ms, due at 130).
        let late = AnswerPlan([
            .init(index: 0, accept: true, sentAt: at(70), transit: transit),
            .init(index: 1, accept: false, sentAt: at(75), transit: transit),
            .init(index: 2, accept: true, sentAt: at(80), transit: transit),
        ], now: at(100), deadline: deadline)
        #expect(late.withdrawn == [0])
        #expect(late.order.map(\.index) == [2, 1, 0])
        #expect(late.order.map(\.accept) == [true, false, false])
        // 40 ms older still: neither can arrive in time.
        let later = AnswerPlan([
            .init(index: 0, accept: true, sentAt: at(30), transit: transit),
            .init(index: 1, accept: true, sentAt: at(40), transit: transit),
        ], now: at(100), deadline: deadline)
        #expect(later.withdrawn == [0, 1])
        // Without a deadline (a GPIO mech) nothing is withdrawn.
        #expect(AnswerPlan([.init(index: 0, accept: true, sentAt: at(0), transit: .zero)], now: at(10_000), deadline: nil).withdrawn.isEmpty)
        // The commit may wait for the database only as long as the earliest accept allows:
        // the second accept has 2.5 ms to spare beyond the 10 ms allowance.
        #expect(plan.commitBudget(deadline: deadline) == .microseconds(12_500))
    }

    @Test("an answer's time on the line counts against the deadline: 18 bytes at 9600 baud take 18.75 ms")
    func lineTiming() {
        let framing = SerialFrame.decisionFraming
        #expect(LineTiming(baud: 9600, answerFraming: framing).transit(bytes: 18) == .microseconds(18_750))
        #expect(LineTiming(baud: 115_200, answerFraming: framing).transit(bytes: 18) == .nanoseconds(1_562_500))
        // "$CMD,123456,A*HH\r\n": 18 bytes; the number's digits are counted, not a fixed width.
        #expect("$CMD,123456,A*00\r\n".utf8.count == 18)
        #expect(LineTiming(baud: 9600, answerFraming: framing).answerTransit(deviceSeq: 123_456) == .microseconds(18_750))
        #expect(LineTiming(baud: 9600, answerFraming: framing).answerTransit(deviceSeq: 7) == .nanoseconds(13_541_666))
        #expect(LineTiming(baud: 9600, answerFraming: framing).answerTransit(deviceSeq: 10_000_000_000) == .nanoseconds(23_958_333))
        let deadline = AnswerDeadline(deadlineMilliseconds: 50, commitAllowanceMilliseconds: 10)
        #expect(deadline.lateBy(sentAt: at(0), arrivesAt: at(50)) == nil)
        #expect(deadline.lateBy(sentAt: at(0), arrivesAt: at(53)) == .milliseconds(3))
    }

    @Test("the mech's clock shows a reading that waited in a buffer for what it is, and follows a drifting crystal")
    func mechClock() {
        var clock = MechClock()
        // Readings every 100 ms, read 1 ms after they were sent.
        for index in 0..<10 {
            #expect(clock.sentAt(mechMilliseconds: 1000 + UInt64(index) * 100, readAt: at(1 + index * 100)) == at(1 + index * 100))
        }
        // The daemon was paused: a reading sent 900 ms ago is read now.
        let sent = clock.sentAt(mechMilliseconds: 1000 + 1100, readAt: at(2000))
        #expect(sent >= at(1101) && sent <= at(1102), "sent \((sent - at(0)).milliseconds) ms after the origin")
        // A mech clock running 100 ppm slow: the offset creeps up with it, no reading looks late.
        var drifting = MechClock()
        for step in 1...600 {
            let host = step * 100
            let read = at(host) + .nanoseconds(Int64(Double(host) * 1e6 * 100e-6))  // the host sees the mech fall behind
            let sent = drifting.sentAt(mechMilliseconds: UInt64(host), readAt: read)
            #expect(read - sent <= .milliseconds(2))
        }
        // A mech whose clock restarted (power-up) starts the estimate again.
        #expect(drifting.sentAt(mechMilliseconds: 10, readAt: at(70_000)) == at(70_000))
    }

    @Test("failpoints parse from the environment's syntax; errors name what is wrong")
    func failpointsParse() throws {
        let points = try Failpoints.parse("after-commit=kill@3, answer-written=sleep:20,published=off")
        #expect(points.isArmed)
        #expect(points.description == "after-commit, answer-written")
        #expect(!(try Failpoints.parse("")).isArmed)
        for bad in ["after-comit=kill", "after-commit=explode", "after-commit=kill@0", "after-commit=sleep:x", "after-commit", "after-commit=fail"] {
            #expect(throws: Failpoints.ParseError.self) { try Failpoints.parse(bad) }
        }
        // A fail failpoint says so on the hit it names, and nowhere else.
        let failing = try Failpoints.parse("payout-moves-committed=fail@2")
        #expect([failing.fails(.payoutMovesCommitted), failing.fails(.payoutMovesCommitted), failing.fails(.payoutMovesCommitted)] == [false, true, false])
        #expect(!failing.fails(.payoutCounted) && !Failpoints.none.fails(.payoutMovesCommitted))
        // A sleep failpoint really stalls, on the hit it names.
        let sleepy = try Failpoints.parse("published=sleep:50@2")
        let start = Date()
        sleepy.hit(.published)
        sleepy.hit(.published)
        #expect(Date().timeIntervalSince(start) >= 0.05)
    }
}

/// The storage against the mech's deadline: slow commits are said, not hidden, and not on
/// every coin.
@Suite("Commit speed: a ledger too slow for the deadline is said once a minute")
struct CommitSpeedWatchTests {
    @Test("commits within the allowance say nothing; the first slow one warns; more within the minute are counted into the next warning")
    func warnsOncePerInterval() {
        var watch = CommitSpeedWatch(allowance: .milliseconds(10))
        #expect(watch.committed(took: .milliseconds(3), at: at(0)) == nil)
        #expect(watch.committed(took: .milliseconds(10), at: at(1)) == nil, "exactly the allowance is in time")
        #expect(watch.committed(took: .milliseconds(25), at: at(2))
            == .init(slowCommits: 1, slowest: .milliseconds(25), allowance: .milliseconds(10)))
        #expect(watch.committed(took: .milliseconds(40), at: at(1_000)) == nil)
        #expect(watch.committed(took: .milliseconds(12), at: at(30_000)) == nil)
        #expect(watch.committed(took: .milliseconds(2), at: at(61_000)) == nil, "a fast commit never warns")
        #expect(watch.committed(took: .milliseconds(11), at: at(62_002))
            == .init(slowCommits: 3, slowest: .milliseconds(40), allowance: .milliseconds(10)))
    }
}
