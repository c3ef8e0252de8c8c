import CoinMechCore
import CoinMechModel
import Testing

/// The deciding core with a decision journal: a batch of fresh decisions is answered once it is
/// durable in the journal, and committed to the ledger after the answers; whatever happens to
/// that commit, no accept goes out for a coin that is neither on the ledger nor in the journal,
/// and no coin is credited twice.
@Suite("Deciding core: the decision journal takes the ledger's commit out of the mech's wait")
struct DecisionJournalCoreTests {
    static let settings: DecidingCore.Settings = {
        var settings = CoreRig.settings
        settings.decisionJournal = true
        return settings
    }()

    static func index(_ log: [CoreOutput], _ match: (CoreOutput) -> Bool) -> Int? { log.lastIndex(where: match) }

    @Test("a coin: journalled, answered, then committed pending; credited once when the mech says stored")
    func journalThenAnswerThenCommit() {
        var rig = CoreRig(settings: Self.settings)
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        let before = rig.log.count
        let outputs = rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(2, sentAt: rig.now)]))
        #expect(outputs.answers.map(\.1) == [true, true])
        let log = Array(rig.log[before...])
        let journal = Self.index(log) { if case .journal(let records) = $0 { return records.map(\.deviceSeq) == [1, 2] }; return false }
        let firstAnswer = log.firstIndex { if case .answer = $0 { return true }; return false }
        let commit = Self.index(log) { if case .commitJournalled = $0 { return true }; return false }
        #expect(journal != nil && firstAnswer != nil && commit != nil)
        #expect(journal! < firstAnswer! && firstAnswer! < commit!, "journal, then the answers, then the ledger (unsynced): \(log)")
        #expect(!log.contains { if case .commit = $0 { return true }; return false }, "nothing of the batch waits for a synced commit")
        #expect(rig.ledger.decisions.values.allSatisfy { $0.state == "pending" } && rig.ledger.decisions.count == 2)
        #expect(rig.core.snapshot.pending == 2)
        rig.now = rig.now + .milliseconds(100)
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored), .confirmation(deviceSeq: 2, fate: .returned)]))
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored)]))
        #expect(rig.ledger.credits == [.init(epoch: 0, deviceSeq: 1): 1])
        #expect(rig.core.snapshot.pending == 0)
        #expect(rig.unrecordedAccepts.isEmpty, "\(rig.unrecordedAccepts)")
    }

    @Test("killed between the answer and the ledger commit: the journal replayed at start makes the coin pending, and the mech's word credits it once",
          arguments: [Failpoint.journalled, .answerWritten])
    func crashBeforeTheLedger(point: Failpoint) {
        var rig = CoreRig(settings: Self.settings)
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 5)]))
        rig.crashAt = point
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        #expect(rig.crashed && rig.ledger.decisions.isEmpty && rig.journal.count == 1, "died with the decision in the journal only")
        rig.restart()
        #expect(rig.ledger.decisions[.init(epoch: 0, deviceSeq: 1)]?.state == "pending")
        #expect(rig.core.snapshot.pending == 1)
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 5)]))
        #expect(rig.feed(.tick).queries.map { "\($0.0)/\($0.1)" } == ["5/1"])
        // Stored if the answer got out (answer-written), returned at its deadline if it did not.
        let fate: CoinFate = point == .answerWritten ? .stored : .returned
        rig.feed(.mech([.journal(boot: 5, deviceSeq: 1, fate: fate), .journal(boot: 5, deviceSeq: 1, fate: fate)]))
        #expect(rig.ledger.credits.values.reduce(0, +) == (fate == .stored ? 1 : 0))
        #expect(rig.ledger.decisions[.init(epoch: 0, deviceSeq: 1)]?.state == (fate == .stored ? "credited" : "returned"))
        #expect(rig.core.snapshot.pending == 0)
    }

    @Test("a ledger commit that fails after the answers: the mech is inhibited, the decision goes first into the commit that ends the failure, and the coin is asked about and credited once")
    func ledgerFailsAfterTheAnswer() {
        var rig = CoreRig(settings: Self.settings)
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 2)]))
        rig.failures = [.full(message: "disk full")]
        let outputs = rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        #expect(outputs.answers.map(\.1) == [true], "answered from the journal before the ledger failed")
        #expect(rig.inhibited && rig.core.snapshot.ledgerFailing)
        #expect(rig.ledger.decisions.isEmpty && rig.journal.count == 1, "the journal keeps it")
        // Its confirmation comes while the ledger fails: nothing to settle yet.
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored)]))
        #expect(rig.ledger.credits.isEmpty)
        // A later reading is committed before it is answered while the ledger fails, and its
        // commit does not end the failure: the journalled decision is not on the ledger yet.
        rig.feed(.mech([CoreRig.reading(2, sentAt: rig.now)]))
        #expect(rig.core.snapshot.ledgerFailing && rig.journal.count == 1)
        rig.now = rig.now + .seconds(5)
        rig.feed(.tick)
        #expect(!rig.inhibited && !rig.core.snapshot.ledgerFailing)
        #expect(rig.ledger.decisions[.init(epoch: 0, deviceSeq: 1)]?.state == "pending")
        #expect(rig.journal.isEmpty, "trimmed once every journalled decision is on the ledger")
        rig.now = rig.now + .milliseconds(300)
        #expect(rig.feed(.tick).queries.map { "\($0.0)/\($0.1)" }.contains("2/1"))
        rig.feed(.mech([.journal(boot: 2, deviceSeq: 1, fate: .stored)]))
        #expect(rig.ledger.credits[.init(epoch: 0, deviceSeq: 1)] == 1)
        #expect(rig.unrecordedAccepts.isEmpty, "\(rig.unrecordedAccepts)")
    }

    @Test("a journal that cannot be written, or a ledger too close to its size limit to take the journal's commit: the batch is committed to the ledger before it is answered",
          arguments: [false, true])
    func journalFails(declined: Bool) {
        var rig = CoreRig(settings: Self.settings)
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        if declined { rig.declineJournal = true } else { rig.journalFailures = ["disk full"] }
        let before = rig.log.count
        #expect(rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)])).answers.map(\.1) == [true])
        let log = Array(rig.log[before...])
        let commit = log.firstIndex { if case .commit = $0 { return true }; return false }
        let answer = log.firstIndex { if case .answer = $0 { return true }; return false }
        #expect(commit != nil && answer != nil && commit! < answer!)
        #expect(rig.journal.isEmpty && rig.ledger.decisions.count == 1)
        #expect(rig.unrecordedAccepts.isEmpty)
    }

    @Test("a batch that also settles or records something is committed before it is answered: only fresh decisions replay safely")
    func mixedBatchesCommitFirst() {
        var rig = CoreRig(settings: Self.settings)
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        let before = rig.log.count
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored), CoreRig.reading(2, sentAt: rig.now)]))
        let log = Array(rig.log[before...])
        #expect(!log.contains { if case .journal = $0 { return true }; return false })
        let commit = log.firstIndex { if case .commit = $0 { return true }; return false }
        let answer = log.firstIndex { if case .answer = $0 { return true }; return false }
        #expect(commit != nil && answer != nil && commit! < answer!)
        #expect(rig.ledger.credits[.init(epoch: 0, deviceSeq: 1)] == 1)
    }
}

/// The journal's edges: when it may be emptied, and a commit that landed though it said it
/// failed.
@Suite("Deciding core: the decision journal's edges")
struct DecisionJournalEdgeTests {
    static func index(_ log: [CoreOutput], _ match: (CoreOutput) -> Bool) -> Int? { log.firstIndex(where: match) }

    @Test("the journal is emptied only once a synced commit has made its decisions durable on the ledger, and after that commit's answers")
    func trimAfterSyncAndAnswers() {
        var rig = CoreRig(settings: DecisionJournalCoreTests.settings)
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        #expect(!rig.log.contains { if case .trimJournal = $0 { return true }; return false },
                "its decision is on the ledger but not on its disk: the journal keeps it")
        #expect(rig.journal.count == 1)
        // The settlement's batch (with a fresh reading) is committed, synced, then answered.
        let before = rig.log.count
        rig.feed(.mech([.confirmation(deviceSeq: 1, fate: .stored), CoreRig.reading(2, sentAt: rig.now)]))
        let log = Array(rig.log[before...])
        let commit = Self.index(log) { if case .commit = $0 { return true }; return false }
        let answer = Self.index(log) { if case .answer(2, _) = $0 { return true }; return false }
        let trim = Self.index(log) { if case .trimJournal = $0 { return true }; return false }
        #expect(commit != nil && answer != nil && trim != nil)
        #expect(commit! < answer! && answer! < trim!, "synced commit, its answers, then the trim: \(log)")
        #expect(rig.trimsBeforeSync == 0 && rig.journal.isEmpty)
        #expect(rig.unrecordedAccepts.isEmpty, "\(rig.unrecordedAccepts)")
    }

    @Test("an accept whose journalled commit landed though it reported a failure is pending when the commit that ends the failure finds it: asked about and credited once")
    func duplicatePendingAccept() {
        var rig = CoreRig(settings: DecisionJournalCoreTests.settings)
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 4)]))
        rig.failuresAfterWriting = [.write(message: "cannot set synchronous = FULL again")]
        #expect(rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)])).answers.map(\.1) == [true])
        #expect(rig.core.snapshot.ledgerFailing && rig.ledger.decisions[.init(epoch: 0, deviceSeq: 1)]?.state == "pending")
        rig.now = rig.now + .seconds(5)
        rig.feed(.tick)
        #expect(!rig.core.snapshot.ledgerFailing)
        #expect(rig.core.snapshot.pending == 1, "the ledger holds it pending: so does the core")
        rig.now = rig.now + .milliseconds(300)
        #expect(rig.feed(.tick).queries.map { "\($0.0)/\($0.1)" } == ["4/1"])
        rig.feed(.mech([.journal(boot: 4, deviceSeq: 1, fate: .stored), .journal(boot: 4, deviceSeq: 1, fate: .stored)]))
        #expect(rig.ledger.credits == [.init(epoch: 0, deviceSeq: 1): 1])
        #expect(rig.core.snapshot.pending == 0)
    }
}
