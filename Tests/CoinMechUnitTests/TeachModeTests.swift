import CoinMechCore
import CoinMechLedger
import CoinMechModel
import CoinMechSerial
import CoinMechSources
import Testing

/// Teach mode in the deciding core, on simulated time: which readings become samples, that
/// every coin is returned and recorded, and the order of stage, record and install.
@Suite("Teach mode in the deciding core: samples kept, every coin returned, stage → record → install")
struct TeachModeTests {
    static let request = TeachRequest(currency: "EUR", code: "EUR_50c", coins: 3, link: "eur", file: "/var/lib/coinmech/calibration/serial-EUR.json")

    /// A rig connected to its mech, teaching `request`.
    static func teaching(_ request: TeachRequest = request, minimum: Int = 2) -> CoreRig {
        var settings = CoreRig.settings
        settings.teachMinimumSamples = minimum
        var rig = CoreRig(settings: settings)
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        let replies = rig.feed(.teachStart(request, by: "root", ticket: Ticket(1))).replies
        guard case .teaching(let session, _)? = replies.first else {
            Issue.record("teach start: \(replies)")
            return rig
        }
        #expect(session.request == request && session.by == "root")
        return rig
    }

    /// The ledger's occurrences of teach mode, by kind.
    static func teachKinds(_ rig: CoreRig) -> [String] {
        rig.ledger.occurrences.map(\.kind.rawValue).filter { $0.hasPrefix("teach") }
    }

    @Test("teaching: every coin is returned and recorded as 'teaching'; readings with a diameter and a weight are samples; nothing is credited")
    func samplesAndReturns() throws {
        var rig = Self.teaching()
        #expect(Self.teachKinds(rig) == ["teach_start"])
        let outputs = rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(2, sentAt: rig.now, weight: nil),
                                      CoreRig.reading(3, sentAt: rig.now, diameter: 24.3)]))
        #expect(outputs.answers.map(\.1) == [false, false, false])
        let decisions = rig.ledger.decisions.values.sorted { $0.seq < $1.seq }
        #expect(decisions.map(\.record.link) == ["teach", "teach", "teach"])
        #expect(decisions.map(\.record.verdict) == [
            .reject(reason: "teaching", message: "teach mode (EUR EUR_50c): sample 1 of 3; every coin is returned"),
            .reject(reason: "teaching", message: "teach mode (EUR EUR_50c): not kept, the mech measured no weight; every coin is returned"),
            .reject(reason: "teaching", message: "teach mode (EUR EUR_50c): sample 2 of 3; every coin is returned"),
        ])
        let session = try #require(rig.core.snapshot.teach)
        #expect(session.samples.map(\.deviceSeq) == [1, 3])
        #expect(session.samples.map(\.diameterMM) == [24.26, 24.3])
        #expect(session.notCollected == 1)
        #expect(rig.ledger.credits.isEmpty && rig.core.snapshot.pending == 0)
        // The chain is never asked while teaching.
        var asked = 0
        rig.decider = { candidate in asked += 1; return CoreRig.quarters(candidate) }
        rig.feed(.mech([CoreRig.reading(4, sentAt: rig.now), CoreRig.reading(5, sentAt: rig.now)]))
        #expect(asked == 0)
        // Enough: a fourth sample is not kept.
        #expect(rig.core.snapshot.teach?.samples.count == 3 && rig.core.snapshot.teach?.isComplete == true)
        #expect(rig.ledger.decisions[.init(epoch: 0, deviceSeq: 5)]?.record.verdict ==
            .reject(reason: "teaching", message: "teach mode (EUR EUR_50c): all 3 sample coins are in; commit or abort (coinctl teach); every coin is returned"))
        #expect(rig.unrecordedAccepts.isEmpty)
    }

    @Test("a sentence repeated is answered as before and kept once; an inhibited mech's readings are not samples")
    func repeatsAndInhibit() {
        var rig = Self.teaching()
        let outputs = rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(1, sentAt: rig.now)]))
        #expect(outputs.answers.map(\.1) == [false, false])
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        #expect(rig.core.snapshot.teach?.samples.count == 1)
        rig.feed(.inhibit(on: true, by: "root", ticket: Ticket(2)))
        rig.feed(.mech([CoreRig.reading(2, sentAt: rig.now)]))
        #expect(rig.ledger.decisions[.init(epoch: 0, deviceSeq: 2)]?.record.link == "inhibit")
        #expect(rig.core.snapshot.teach?.samples.count == 1)
    }

    @Test("one session at a time; commit and abort without one are refused, and so is a commit with too few samples")
    func refusals() {
        var rig = Self.teaching(minimum: 2)
        let again = rig.feed(.teachStart(TeachRequest(currency: "EUR", code: "EUR_1", coins: 20, link: "eur", file: "/x"), by: "ops", ticket: Ticket(2)))
        #expect(again.replies == [.teachRefused("already teaching EUR EUR_50c (0 of 3 sample coins in, started by root): commit or abort it first")])
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        let early = rig.feed(.teachCommit(by: "root", ticket: Ticket(3)))
        #expect(early.replies == [.teachRefused("only 1 sample coins of EUR EUR_50c are in; at least 2 are needed to commit (3 asked for): insert more, or abort")])
        #expect(!early.contains { if case .stageCalibration = $0 { return true }; return false })
        #expect(rig.core.snapshot.teach?.samples.count == 1)
        #expect(Self.teachKinds(rig) == ["teach_start"])

        var idle = CoreRig()
        #expect(idle.feed(.teachCommit(by: "root", ticket: Ticket(1))).replies == [.teachRefused("not teaching: start with coinctl teach start CURRENCY CODE")])
        #expect(idle.feed(.teachAbort(by: "root", ticket: Ticket(2))).replies == [.teachRefused("not teaching: start with coinctl teach start CURRENCY CODE")])
        #expect(idle.ledger.occurrences.isEmpty)
    }

    @Test("commit: staged, then recorded, then put in place, then replied; teach mode ends and coins are decided again")
    func commit() throws {
        var rig = Self.teaching()
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(2, sentAt: rig.now)]))
        let outputs = rig.feed(.teachCommit(by: "ops", ticket: Ticket(7)))
        func index(_ match: (CoreOutput) -> Bool) -> Int { rig.log.lastIndex(where: match) ?? -1 }
        let stage = index { if case .stageCalibration = $0 { return true }; return false }
        let record = index { if case .commit(let entries, _) = $0, case .note(.teachCommit)? = entries.first { return true }; return false }
        let install = index { if case .installCalibration = $0 { return true }; return false }
        let reply = index { if case .reply(Ticket(7), _) = $0 { return true }; return false }
        #expect(stage >= 0 && stage < record && record < install && install < reply, "\(stage) \(record) \(install) \(reply)")
        guard case .taught(let committed, let seq)? = outputs.replies.first else { Issue.record("\(outputs.replies)"); return }
        #expect(committed.by == "ops" && committed.code == "EUR_50c" && committed.samples == 2 && committed.file == Self.request.file)
        #expect(seq == rig.ledger.seq)
        #expect(rig.installed.map(\.record) == [committed])
        #expect(Self.teachKinds(rig) == ["teach_start", "teach_commit"])
        #expect(rig.core.snapshot.teach == nil)
        #expect(rig.feed(.mech([CoreRig.reading(3, sentAt: rig.now)])).answers.map(\.1) == [true])
    }

    @Test("a calibration the ledger cannot record is thrown away, and teaching goes on")
    func commitUnrecorded() {
        var rig = Self.teaching()
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(2, sentAt: rig.now)]))
        rig.failures = [.full(message: "disk full")]
        let outputs = rig.feed(.teachCommit(by: "ops", ticket: Ticket(2)))
        #expect(outputs.replies == [.unrecorded("the ledger cannot record the calibration: nothing written; still teaching, commit again")])
        #expect(rig.installed.isEmpty && rig.discarded.count == 1)
        #expect(rig.core.snapshot.teach?.samples.count == 2)
        // The ledger writes again: the commit goes through.
        rig.now = rig.now + .seconds(5)
        rig.feed(.tick)
        #expect(rig.feed(.teachCommit(by: "ops", ticket: Ticket(3))).replies.contains { if case .taught = $0 { return true }; return false })
        #expect(rig.installed.count == 1)
    }

    @Test("a calibration that cannot be written records nothing; one recorded but not put in place says so; teaching goes on in both")
    func writeFailures() {
        var rig = Self.teaching()
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now), CoreRig.reading(2, sentAt: rig.now)]))
        rig.stageFailure = TeachFailure("cannot write /var/lib/coinmech/calibration: read-only file system")
        #expect(rig.feed(.teachCommit(by: "ops", ticket: Ticket(2))).replies ==
            [.teachFailed("cannot write /var/lib/coinmech/calibration: read-only file system; still teaching")])
        #expect(Self.teachKinds(rig) == ["teach_start"])
        rig.stageFailure = nil
        rig.installFailure = TeachFailure("rename: I/O error")
        let replies = rig.feed(.teachCommit(by: "ops", ticket: Ticket(3))).replies
        #expect(replies.count == 1)
        if case .teachFailed(let message)? = replies.first {
            #expect(message.hasPrefix("recorded as event #") && message.hasSuffix("but not put in place: rename: I/O error; coin-table keeps its previous windows; still teaching: commit again"))
        } else {
            Issue.record("\(replies)")
        }
        #expect(rig.core.snapshot.teach != nil)
        #expect(!rig.core.isAwaitingCommit)
    }

    @Test("abort: recorded, nothing staged, coins decided again; one the ledger cannot record keeps teaching")
    func abort() {
        var rig = Self.teaching()
        rig.feed(.mech([CoreRig.reading(1, sentAt: rig.now)]))
        rig.failures = [.write(message: "I/O error")]
        #expect(rig.feed(.teachAbort(by: "ops", ticket: Ticket(2))).replies == [.unrecorded("the ledger cannot record it: still teaching")])
        #expect(rig.core.snapshot.teach != nil)
        rig.now = rig.now + .seconds(5)
        rig.feed(.tick)
        let outputs = rig.feed(.teachAbort(by: "ops", ticket: Ticket(3)))
        guard case .teachAborted(let session, _)? = outputs.replies.first else { Issue.record("\(outputs.replies)"); return }
        #expect(session.samples.count == 1)
        #expect(!rig.log.contains { if case .stageCalibration = $0 { return true }; return false })
        #expect(Self.teachKinds(rig) == ["teach_start", "teach_abort"])
        #expect(rig.core.snapshot.teach == nil)
        #expect(rig.feed(.mech([CoreRig.reading(2, sentAt: rig.now)])).answers.map(\.1) == [true])
    }

    @Test("a teach start the ledger cannot record does not start; a daemon stopping while teaching records its end")
    func startUnrecordedAndStop() {
        var rig = CoreRig()
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        rig.failures = [.full(message: "disk full")]
        #expect(rig.feed(.teachStart(Self.request, by: "root", ticket: Ticket(1))).replies == [.unrecorded("the ledger cannot record it: teach mode not started")])
        #expect(rig.core.snapshot.teach == nil)

        var stopping = Self.teaching()
        stopping.feed(.stop(FrameErrorCounts()))
        #expect(stopping.ledger.occurrences.suffix(2).map(\.kind.rawValue) == ["teach_abort", "shutdown"])
        #expect(stopping.ledger.occurrences.contains(.teachAbort(source: "serial", currency: "EUR", code: "EUR_50c", samples: 0, by: "coinmechd (stopping)")))
    }
}
