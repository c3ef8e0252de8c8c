import CoinMechCore
import CoinMechLedger
import CoinMechModel
import CoinMechSerial
import CoinMechSources
import Testing

/// The deciding core on simulated time: what it commits, answers, asks and credits.
@Suite("The deciding core: commit before answer, credit on the mech's word, on simulated time")
struct DecidingCoreTests {
    @Test("a coin: committed pending, then answered; credited when the mech says stored, once")
    func oneCoin() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        let outputs = rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        #expect(outputs.answers.map(\.1) == [true])
        // The commit came before the answer, and held the decision as pending.
        let commit = rig.log.lastIndex { if case .commit = $0 { return true }; return false }!
        let answer = rig.log.lastIndex { if case .answer = $0 { return true }; return false }!
        #expect(commit < answer)
        #expect(rig.ledger.decisions.values.first?.state == "pending")
        #expect(rig.core.snapshot.pending == 1 && rig.core.snapshot.counters.credited == 0)
        rig.now = rig.now + .milliseconds(120)
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored)]))
        #expect(rig.core.snapshot.counters.credited == 1)
        #expect(rig.core.snapshot.pending == 0)
        // The mech repeats itself: nothing more is credited.
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored), .journal(boot: 1, deviceSeq: 1, fate: .stored)]))
        #expect(rig.ledger.credits.values.reduce(0, +) == 1)
        #expect(rig.unrecordedAccepts.isEmpty)
    }

    @Test("a reading that waited in the buffer past what the deadline allows is answered 'return' and recorded as such")
    func lateReadingWithdrawn() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        rig.now = at(1000)
        let outputs = rig.feed(.mech([CoreRig.reading(1, sentAt: at(960)), CoreRig.reading(2, sentAt: at(995))]))
        #expect(outputs.answers.map(\.1) == [true, false])  // accepts first: 2 is in time, 1 is withdrawn
        #expect(outputs.answers.map(\.0) == [2, 1])
        let first = rig.ledger.decisions[.init(epoch: 0, deviceSeq: 1)]
        #expect(first?.accepted == false)
        #expect(first?.record.link == "deadline")
        #expect(rig.core.snapshot.counters.deadlineWithdrawn == 1)
    }

    @Test("a chain that takes 80 ms leaves no time for the mech's 50 ms: the accept is withdrawn")
    func slowChain() {
        var rig = CoreRig()
        let start = rig.now
        rig.decider = { _ in Decided(verdict: .accept(currency: "USD", code: "quarter", valueMinor: 25), link: "usd", chainGeneration: 1,
                                     decidedAt: start + .milliseconds(80)) }
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        let outputs = rig.feed(.mech([CoreRig.reading(1, sentAt: start)]))
        #expect(outputs.answers.map(\.1) == [false])
        let decision = rig.ledger.decisions[.init(epoch: 0, deviceSeq: 1)]
        #expect(decision?.record.link == "deadline")
        #expect(decision?.record.verdict == .reject(reason: "deadline_passed",
                                                    message: "decided 80.0 ms after the reading left the mech, too late for its 50 ms deadline (usd accepted it)"))
    }

    @Test("a sentence repeated within a batch: one decision, the same answer twice, one coin counted")
    func repeatedInBatch() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        let outputs = rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(1, sentAt: rig.now)]))
        #expect(outputs.answers.map(\.1) == [true, true])
        #expect(rig.ledger.decisions.count == 1)
        #expect(rig.core.snapshot.counters.accepted == 1)
        #expect(rig.core.snapshot.counters.duplicates == 1)
        // The same, withdrawn: both answers are "return".
        rig.now = at(5000)
        let late = rig.feed(.mech([CoreRig.reading(2, sentAt: at(4900)), CoreRig.reading(2, sentAt: at(4900))]))
        #expect(late.answers.map(\.1) == [false, false])
    }

    @Test("a commit that fails returns every coin and inhibits the mech; a later write lifts it")
    func ledgerFails() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        rig.failures = [.full(message: "disk full")]
        let outputs = rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        #expect(outputs.answers.map(\.1) == [false])
        #expect(rig.inhibited)
        #expect(rig.core.snapshot.ledgerFailing)
        // Retried after 5 s, with what could not be recorded.
        rig.now = rig.now + .seconds(5)
        rig.feed(.tick)
        #expect(!rig.inhibited && !rig.core.snapshot.ledgerFailing)
        #expect(rig.ledger.occurrences.contains { if case .ledgerRecovered = $0 { return true }; return false })
        #expect(rig.ledger.occurrences.contains { if case .sourceConnected = $0 { return true }; return false })
    }

    @Test("a busy database returns the batch's coins but inhibits nothing")
    func ledgerBusy() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        rig.failures = [.busy(message: "database is locked")]
        let outputs = rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        #expect(outputs.answers.map(\.1) == [false])
        #expect(!rig.inhibited && !rig.core.snapshot.ledgerFailing)
        #expect(rig.feed(.mech([CoreRig.reading(2, sentAt: rig.now)])).answers.map(\.1) == [true])
    }

    @Test("no confirmation: the mech is asked after the window; its journal settles the coin; silence makes it unconfirmed")
    func askingTheMech() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 7)]))
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(2, sentAt: rig.now)]))
        rig.now = rig.now + .milliseconds(299)
        #expect(rig.feed(.tick).queries.isEmpty)
        rig.now = rig.now + .milliseconds(1)
        #expect(rig.feed(.tick).queries.map { "\($0.0)/\($0.1)" } == ["7/1", "7/2"])
        rig.feed(.mech([.journal(boot: 7, deviceSeq: 1, fate: .stored)]))
        #expect(rig.core.snapshot.counters.credited == 1)
        // Coin 2 was asked about once; four more questions go unanswered…
        for _ in 0..<4 {
            rig.now = rig.now + .milliseconds(300)
            #expect(rig.feed(.tick).queries.map(\.1) == [2])
        }
        // …and the sixth time it falls due, the coin is given up on.
        rig.now = rig.now + .milliseconds(300)
        #expect(rig.feed(.tick).queries.isEmpty)
        #expect(rig.core.snapshot.counters.unconfirmed == 1)
        #expect(rig.ledger.unconfirmed == [.init(epoch: 0, deviceSeq: 2)])
        #expect(rig.core.snapshot.pending == 0)
    }

    @Test("after a restart, pending coins are asked about once the mech names its session; a new boot is a new epoch")
    func restart() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .powerUp(boot: 3)]))
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(2, sentAt: rig.now)]))
        rig.restart()
        #expect(rig.core.snapshot.pending == 2)
        // Connected again; the mech says it rebooted meanwhile.
        let session = rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 4)]))
        #expect(session.queries.isEmpty)  // asked at the next tick, by the old epoch's boot
        #expect(rig.ledger.epoch == 2)
        #expect(rig.feed(.tick).queries.map { "\($0.0)/\($0.1)" } == ["3/1", "3/2"])
        rig.feed(.mech([.journal(boot: 3, deviceSeq: 1, fate: .returned), .journal(boot: 3, deviceSeq: 2, fate: .unknown)]))
        #expect(rig.core.snapshot.counters.returnedAfterAccept == 1)
        #expect(rig.core.snapshot.counters.unconfirmed == 1)
        #expect(rig.ledger.credits.isEmpty)
        // The new session's coin 1 is not the old epoch's coin 1.
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        #expect(rig.ledger.decisions[.init(epoch: 2, deviceSeq: 1)]?.accepted == true)
    }

    // Window 2 of the money review: the mech rebooted while the line was down, and its next
    // coin came before its SESSION answer. It was accepted under the old boot; its $CMC was
    // matched against the new epoch and dropped, the query went to the old boot's journal,
    // and a coin in the cash box ended unconfirmed.
    @Test("a reading before the mech names its session after a connect is returned, not filed under a guessed boot")
    func readingBeforeSession() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 3)]))
        let first = rig.ledger.epoch
        #expect(rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)])).answers.map(\.1) == [true])
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored)]))
        rig.feed(.mech([.lost(path: "/dev/mech", reason: "hang-up")]))
        // Back, and the mech (rebooted meanwhile, boot 4) sends its second coin before SESSION.
        rig.feed(.mech([.connected(path: "/dev/mech")]))
        let answers = rig.feed(.mech([CoreRig.reading(2, sentAt: rig.now, diameter: 21.21, weight: 5.0)])).answers
        #expect(answers.map(\.1) == [false], "accepted while the mech's session was unknown")
        let decision = rig.ledger.decisions.values.first { $0.key.deviceSeq == 2 }
        #expect(decision?.record.verdict == .reject(reason: "session_unknown",
                                                     message: "the mech has not named its session since it connected: the coin could be filed under the wrong boot, so it is returned"))
        rig.feed(.mech([.session(boot: 4)]))
        #expect(rig.ledger.epoch == first + 1)
        #expect(rig.core.snapshot.pending == 0)
        // Once the session is known, coins are accepted again, in the new epoch.
        #expect(rig.feed(.mech([CoreRig.reading(3, sentAt: rig.now)])).answers.map(\.1) == [true])
        #expect(rig.ledger.decisions[.init(epoch: first + 1, deviceSeq: 3)]?.accepted == true)
    }

    // Window 3 of the money review: one repeated number with another measurement started a new
    // epoch unchecked; the confirmations of the coins in flight were then matched against it
    // and dropped, and two epochs came to share one boot.
    @Test("a number that goes back is returned and the mech asked its session: the same boot keeps the epoch and its confirmations")
    func repeatedNumberIsNotAPowerUp() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 3)]))
        #expect(rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(2, sentAt: rig.now)])).answers.map(\.1) == [true, true])
        let epoch = rig.ledger.epoch
        // Coin 2's number again, another measurement: a garbled sentence, not a power-up.
        let conflict = rig.feed(.mech([CoreRig.reading(2, sentAt: rig.now, diameter: 21.21, weight: 5.0)]))
        #expect(conflict.answers.map(\.1) == [false])
        #expect(conflict.contains { if case .askSession = $0 { return true }; return false })
        #expect(rig.ledger.epoch == epoch)
        rig.feed(.mech([.session(boot: 3)]))
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored), .confirmation(deviceSeq: 2, fate: .stored)]))
        #expect(rig.core.snapshot.counters.credited == 2, "the coins in flight were credited")
        #expect(rig.ledger.epoch == epoch && Set(rig.ledger.boots.values) == [3])
        #expect(rig.feed(.mech([CoreRig.reading(3, sentAt: rig.now)])).answers.map(\.1) == [true])
    }

    @Test("numbers going back because the mech rebooted unannounced: returned until its SESSION names the new boot, then a new epoch")
    func unannouncedReboot() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 3)]))
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(2, sentAt: rig.now)]))
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored), .confirmation(deviceSeq: 2, fate: .stored)]))
        // The mech restarted (boot 4) and its POWERUP was lost: its coin 1 comes again.
        #expect(rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now, diameter: 21.21, weight: 5.0)])).answers.map(\.1) == [false])
        #expect(rig.feed(.mech([CoreRig.reading(2, sentAt: rig.now, diameter: 19.05, weight: 2.5)])).answers.map(\.1) == [false])
        rig.feed(.mech([.session(boot: 4)]))
        #expect(rig.ledger.boots[rig.ledger.epoch] == 4)
        #expect(rig.feed(.mech([CoreRig.reading(3, sentAt: rig.now)])).answers.map(\.1) == [true])
        #expect(rig.ledger.decisions[.init(epoch: rig.ledger.epoch, deviceSeq: 3)]?.accepted == true)
        #expect(rig.core.snapshot.counters.credited == 2)
    }

    // Found by the property test once it rebooted the mech while the line was down: a new
    // coin that read exactly like the old boot's coin of the same number was taken for a repeat
    // and answered "accept" again, so the mech took it with no decision on the ledger.
    @Test("a repeat is answered 'accept' again only within the original's deadline, and not before the session is known")
    func repeatsAcceptedOnlyWhileTheyMatter() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 3)]))
        let sentence = CoreRig.reading(1, sentAt: rig.now)
        #expect(rig.feed(.mech([sentence])).answers.map(\.1) == [true])
        rig.now = rig.now + .milliseconds(10)
        #expect(rig.feed(.mech([sentence])).answers.map(\.1) == [true], "a repeat within the deadline")
        rig.now = rig.now + .milliseconds(100)
        #expect(rig.feed(.mech([sentence])).answers.map(\.1) == [false], "past the original's deadline the mech gave up on it")
        // After a reconnect, before SESSION: the same number and figures are returned.
        rig.feed(.mech([.lost(path: "/dev/mech", reason: "hang-up"), .connected(path: "/dev/mech")]))
        #expect(rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)])).answers.map(\.1) == [false])
        #expect(rig.ledger.decisions.count == 1)
    }


    // Window 3's last part: boot numbers were assumed never to repeat. A mech whose counter
    // started again (a firmware update, a wiped EEPROM) named boot 3 twice; the old session's
    // coin was then asked about by "3", and the answer, which speaks of the new session's coin
    // of that number, was taken for it.
    @Test("a boot number named again is refused as a conflict: the older session's coins are no longer asked by it")
    func repeatedBootNumber() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 3)]))
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(2, sentAt: rig.now)]))
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored)]))
        let old = rig.ledger.epoch
        rig.feed(.mech([.lost(path: "/dev/mech", reason: "hang-up"), .connected(path: "/dev/mech"), .session(boot: 4)]))
        rig.feed(.mech([.lost(path: "/dev/mech", reason: "hang-up"), .connected(path: "/dev/mech")]))
        let again = rig.feed(.mech([.session(boot: 3)]))
        #expect(rig.ledger.epoch == old + 2)
        #expect(rig.ledger.occurrences.contains {
            if case .mechStatus(_, "boot_conflict", let detail) = $0 { return detail.contains("boot 3") }
            return false
        }, "the repeated boot is recorded as a conflict")
        rig.now = rig.now + .milliseconds(300)
        let asked = again + rig.feed(.tick)
        #expect(asked.queries.isEmpty, "the old session's coin 2 was asked by a boot number that now names another session")
        #expect(rig.ledger.unconfirmed == [.init(epoch: old, deviceSeq: 2)])
        #expect(rig.core.snapshot.pending == 0)
        // The new session's coins are asked by its boot as usual.
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        rig.now = rig.now + .milliseconds(300)
        #expect(rig.feed(.tick).queries.map { "\($0.0)/\($0.1)" } == ["3/1"])
        rig.feed(.mech([.journal(boot: 3, deviceSeq: 1, fate: .stored)]))
        #expect(rig.ledger.credits[.init(epoch: old + 2, deviceSeq: 1)] == 1 && rig.ledger.credits[.init(epoch: old, deviceSeq: 1)] == 1)
    }
    @Test("a reload is recorded before its chain is swapped in; one the ledger cannot record is not swapped")
    func reload() {
        var rig = CoreRig()
        let record = Occurrence.ReloadRecord(generation: 2, previous: 1, links: "usd=coin-table@1", fingerprint: "f")
        let outputs = rig.feed(.reload(record, ticket: Ticket(1)))
        let commit = rig.log.firstIndex { if case .commit = $0 { return true }; return false }!
        let swap = rig.log.firstIndex { $0 == .swapChain(Ticket(1)) }!
        #expect(commit < swap)
        #expect(outputs.contains(.reply(Ticket(1), .reloaded(record, seq: 1))))
        rig.failures = [.full(message: "disk full")]
        let refused = rig.feed(.reload(Occurrence.ReloadRecord(generation: 3, previous: 2, links: "", fingerprint: "g"), ticket: Ticket(2)))
        #expect(!refused.contains(.swapChain(Ticket(2))))
        #expect(refused.contains { if case .reply(Ticket(2), .unrecorded) = $0 { return true }; return false })
    }

    @Test("the operator's inhibit: readings that still arrive are returned as inhibited, recorded, and lifting it restores accepting")
    func inhibit() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        rig.feed(.inhibit(on: true, by: "root", ticket: Ticket(1)))
        #expect(rig.inhibited)
        #expect(rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)])).answers.map(\.1) == [false])
        #expect(rig.ledger.decisions[.init(epoch: 0, deviceSeq: 1)]?.record.link == "inhibit")
        rig.feed(.inhibit(on: false, by: "root", ticket: Ticket(2)))
        #expect(!rig.inhibited)
        #expect(rig.feed(.mech([CoreRig.reading(2, sentAt: rig.now)])).answers.map(\.1) == [true])
    }

    @Test("a link out of service inhibits the mech, returns what still arrives, and is recorded; back in service, coins are accepted")
    func pluginInhibit() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        let out = Occurrence.LinkOutOfService(link: "usd", state: "quarantined", cause: "crashed", reason: "3 crashes in 60 s",
                                              generation: 1, plugin: "coin-table", sha256: "ab")
        rig.feed(.pluginHealth(inhibit: "link 'usd' is quarantined", record: [.quarantined(out)]))
        #expect(rig.inhibited)
        #expect(rig.core.snapshot.pluginInhibit == "link 'usd' is quarantined")
        #expect(rig.ledger.occurrences.contains(.quarantined(out)))
        #expect(rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)])).answers.map(\.1) == [false])
        #expect(rig.ledger.decisions[.init(epoch: 0, deviceSeq: 1)]?.record.link == "inhibit")
        // The operator lifting an inhibit of theirs does not lift the plugins'.
        rig.feed(.inhibit(on: false, by: "root", ticket: Ticket(1)))
        #expect(rig.inhibited)
        rig.feed(.pluginHealth(inhibit: nil, record: [.quarantineLifted(link: "usd", generation: 2)]))
        #expect(!rig.inhibited)
        #expect(rig.feed(.mech([CoreRig.reading(2, sentAt: rig.now)])).answers.map(\.1) == [true])
    }

    @Test("a pulse mech's coin is credited with its decision", arguments: [CreditRule.atOnce])
    func creditAtOnce(credit: CreditRule) {
        var settings = CoreRig.settings
        settings.credit = credit
        settings.deadline = nil
        settings.line = nil
        var rig = CoreRig(settings: settings)
        rig.feed(.mech([.connected(path: "gpiochip0"), CoreRig.reading(1, sentAt: rig.now)]))
        #expect(rig.core.snapshot.counters.credited == 1)
        #expect(rig.ledger.credits[.init(epoch: 0, deviceSeq: 1)] == 1)
        #expect(rig.core.snapshot.pending == 0)
    }
}
