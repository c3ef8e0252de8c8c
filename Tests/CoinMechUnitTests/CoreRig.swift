import CoinMechCore
import CoinMechLedger
import CoinMechModel
import CoinMechSerial
import CoinMechSources
import Testing

/// A ledger in memory with the real one's rules: a coin is decided once (same source, epoch,
/// device seq), a decision settled once, totals only with a credit.
struct FakeLedger {
    struct Key: Hashable, CustomStringConvertible {
        var epoch: Int64
        var deviceSeq: UInt64
        var description: String { "\(epoch)/\(deviceSeq)" }
    }

    struct Decision {
        var seq: Int64
        var key: Key
        var accepted: Bool
        var state: String?
        var record: DecisionRecord
    }

    private(set) var seq: Int64 = 0
    private(set) var decisions: [Key: Decision] = [:]
    private var bySeq: [Int64: Key] = [:]
    private(set) var credits: [Key: Int] = [:]
    private(set) var unconfirmed: Set<Key> = []
    private(set) var boots: [Int64: UInt64] = [:]
    private(set) var epoch: Int64 = 0
    private(set) var occurrences: [Occurrence] = []

    mutating func append(_ entries: [LedgerEntry]) -> AppendResult {
        var outcomes: [EntryOutcome] = []
        for entry in entries {
            switch entry {
            case .decision(let record, let credit):
                let key = Key(epoch: record.epoch, deviceSeq: record.deviceSeq)
                if let existing = decisions[key] {
                    outcomes.append(.duplicate(seq: existing.seq, accepted: existing.accepted, pending: existing.state == "pending"))
                    continue
                }
                seq += 1
                let accepted = record.verdict.isAccept
                let state: String? = accepted ? (credit == .atOnce ? "credited" : "pending") : nil
                decisions[key] = Decision(seq: seq, key: key, accepted: accepted, state: state, record: record)
                bySeq[seq] = key
                var events = [event(seq, kind: "decision", key: key, state: state)]
                if accepted, credit == .atOnce {
                    credits[key, default: 0] += 1
                    seq += 1
                    events.append(event(seq, kind: "coin", key: key, state: nil))
                }
                outcomes.append(.recorded(events))
            case .resolve(let decisionSeq, let resolution, _):
                guard let key = bySeq[decisionSeq], decisions[key]?.state == "pending" else {
                    outcomes.append(.alreadySettled)
                    continue
                }
                decisions[key]?.state = resolution.rawValue
                if resolution == .credited { credits[key, default: 0] += 1 }
                if resolution == .unconfirmed { unconfirmed.insert(key) }
                seq += 1
                outcomes.append(.recorded([event(seq, kind: resolution == .credited ? "coin" : "coin_\(resolution.rawValue)", key: key, state: nil)]))
            case .lateCredit(let decisionSeq, _):
                guard let key = bySeq[decisionSeq], decisions[key]?.state == "unconfirmed" else {
                    outcomes.append(.alreadySettled)
                    continue
                }
                decisions[key]?.state = "credited"
                credits[key, default: 0] += 1
                unconfirmed.remove(key)
                seq += 1
                outcomes.append(.recorded([event(seq, kind: "coin", key: key, state: nil)]))
            case .note(let occurrence):
                occurrences.append(occurrence)
                switch occurrence {
                case .mechPowerUp(_, let epoch, let boot, _):
                    self.epoch = epoch
                    if let boot { boots[epoch] = boot }
                case .mechSession(_, let epoch, let boot):
                    self.epoch = epoch
                    boots[epoch] = boot
                default:
                    break
                }
                seq += 1
                outcomes.append(.recorded([LedgerEvent(seq: seq, time: 0, kind: occurrence.kind.rawValue)]))
            case .collect:
                seq += 1
                var event = LedgerEvent(seq: seq, time: 0, kind: "collect")
                event.collected = []
                event.collectedUnconfirmed = []
                outcomes.append(.recorded([event]))
            case .payoutRequested, .payoutDispensing, .payoutSettled, .inventory, .creditOpened, .credit:
                // The deciding core never journals money out or a customer's credit moves.
                Issue.record("the deciding core wrote a payout or credit entry: \(entry)")
            }
        }
        return AppendResult(outcomes: outcomes, events: outcomes.flatMap { if case .recorded(let e) = $0 { return e }; return [] })
    }

    private func event(_ seq: Int64, kind: String, key: Key, state: String?) -> LedgerEvent {
        LedgerEvent(seq: seq, time: 0, kind: kind, source: "serial", epoch: key.epoch, deviceSeq: Int64(key.deviceSeq), state: state)
    }

    /// What a restarted daemon reads back.
    func restored() -> DecidingCore.Restored {
        let current = decisions.values.filter { $0.key.epoch == epoch }.sorted { $0.seq < $1.seq }
        let recent = current.suffix(256).map {
            RecentDecision(deviceSeq: $0.key.deviceSeq, diameterMM: $0.record.diameterMM, weightG: $0.record.weightG,
                           thicknessMM: $0.record.thicknessMM, channel: $0.record.channel, accepted: $0.accepted)
        }
        let pending = decisions.values.filter { $0.state == "pending" }.sorted { $0.seq < $1.seq }.map {
            PendingRecord(seq: $0.seq, epoch: $0.key.epoch, boot: boots[$0.key.epoch], deviceSeq: $0.key.deviceSeq, time: 0)
        }
        return DecidingCore.Restored(state: SourceState(epoch: epoch, boot: boots[epoch], lastDeviceSeq: recent.map { $0.deviceSeq }.max(), recent: recent),
                                     boots: boots, pending: pending)
    }
}

/// Runs a `DecidingCore` against a `FakeLedger` the way the daemon's shell does, and records
/// what it was asked to do. A commit can be made to fail.
struct CoreRig {
    var core: DecidingCore
    var ledger = FakeLedger()
    var now = at(0)
    /// Fail the next commits with this error.
    var failures: [LedgerError] = []
    /// Report the next commits failed with this error after they were written (a commit that
    /// landed though the ledger said it failed: its restore of `synchronous`, say).
    var failuresAfterWriting: [LedgerError] = []
    /// A journalled batch's commit (unsynced) wrote since the last synced commit that wrote.
    private(set) var ledgerAheadOfSync = false
    /// Journal trims made while the ledger had not synced what the journal held.
    private(set) var trimsBeforeSync = 0
    /// The decision journal (with `settings.decisionJournal`): what it holds, and reasons to
    /// fail its next appends with.
    var journal: [DecisionRecord] = []
    var journalFailures: [String] = []
    /// Decline every journal append (a ledger near its size limit).
    var declineJournal = false
    /// Die at this failpoint: nothing after it is carried out until `restart()`.
    var crashAt: Failpoint?
    private(set) var crashed = false
    /// Every output carried out, in order (commits included).
    var log: [CoreOutput] = []
    /// Accept answers given for a coin the ledger did not hold as an accept at that moment.
    var unrecordedAccepts: [String] = []
    var inhibited = false
    var decider: (Candidate) -> Decided
    /// The shell's calibration files: staging and installing succeed unless these say otherwise.
    var stageFailure: TeachFailure?
    var installFailure: TeachFailure?
    /// Calibrations put in place, and staged ones thrown away, in order.
    private(set) var installed: [StagedCalibration] = []
    private(set) var discarded: [StagedCalibration] = []

    static let settings: DecidingCore.Settings = {
        var settings = DecidingCore.Settings(source: "serial", credit: .onConfirmation,
                                             deadline: AnswerDeadline(deadlineMilliseconds: 50, commitAllowanceMilliseconds: 10),
                                             line: LineTiming(baud: 115_200, answerFraming: SerialFrame.decisionFraming))
        settings.confirmationWindow = .milliseconds(300)
        return settings
    }()

    /// Accepts every coin as a quarter.
    static let quarters: @Sendable (Candidate) -> Decided = { _ in Decided(verdict: .accept(currency: "USD", code: "quarter", valueMinor: 25), link: "usd", chainGeneration: 1) }

    init(settings: DecidingCore.Settings = CoreRig.settings, decider: @escaping (Candidate) -> Decided = CoreRig.quarters) {
        core = DecidingCore(settings: settings, restored: FakeLedger().restored(), logger: .discarding,
                            now: at(0))
        self.decider = decider
    }

    /// A daemon restart: the journal replayed into the ledger (as `DecisionJournal.replay`),
    /// then a new core from what the ledger holds.
    mutating func restart() {
        _ = ledger.append(journal.map { .decision($0, credit: .onConfirmation) })
        journal = []
        crashed = false
        crashAt = nil
        core = DecidingCore(settings: core.settings, restored: ledger.restored(), logger: .discarding,
                            now: now)
        log.append(contentsOf: core.start(now: now))
    }

    /// Steps `input` at the rig's time and carries out what comes out; returns the outputs
    /// other than commits and failpoints.
    @discardableResult
    mutating func feed(_ input: CoreInput) -> [CoreOutput] {
        carryOut(core.step(input, at: now, decide: decider))
    }

    private mutating func carryOut(_ outputs: [CoreOutput]) -> [CoreOutput] {
        var visible: [CoreOutput] = []
        for output in outputs {
            guard !crashed else { break }
            log.append(output)
            switch output {
            case .failpoint(let point) where point == crashAt:
                crashed = true
            case .journal(let records):
                if declineJournal {
                    visible += carryOut(core.step(.journalDeclined, at: now, decide: decider))
                } else if !journalFailures.isEmpty {
                    visible += carryOut(core.step(.journalFailed(journalFailures.removeFirst()), at: now, decide: decider))
                } else {
                    journal += records
                    visible += carryOut(core.step(.journalled, at: now, decide: decider))
                }
            case .trimJournal:
                for record in journal where ledger.decisions[FakeLedger.Key(epoch: record.epoch, deviceSeq: record.deviceSeq)] == nil {
                    unrecordedAccepts.append("journal trimmed before \(record.epoch)/\(record.deviceSeq) was on the ledger")
                }
                if ledgerAheadOfSync, !journal.isEmpty { trimsBeforeSync += 1 }
                journal = []
            case .commit(let entries, _), .commitJournalled(let entries):
                if !failures.isEmpty {
                    let error = failures.removeFirst()
                    visible += carryOut(core.step(.commitFailed(error), at: now, decide: decider))
                } else {
                    let result = ledger.append(entries)
                    if !result.events.isEmpty {
                        if case .commitJournalled = output { ledgerAheadOfSync = true } else { ledgerAheadOfSync = false }
                    }
                    if !failuresAfterWriting.isEmpty {
                        let error = failuresAfterWriting.removeFirst()
                        visible += carryOut(core.step(.commitFailed(error), at: now, decide: decider))
                    } else {
                        visible += carryOut(core.step(.committed(result), at: now, decide: decider))
                    }
                }
            case .answer(let seq, true):
                let decision = ledger.decisions[FakeLedger.Key(epoch: ledger.epoch, deviceSeq: seq)]
                let journalled = journal.contains { $0.epoch == ledger.epoch && $0.deviceSeq == seq && $0.verdict.isAccept }
                if decision?.accepted != true && !journalled {
                    unrecordedAccepts.append("accept for \(ledger.epoch)/\(seq) with no accept on the ledger or in the journal")
                }
                visible.append(output)
            case .setInhibit(let on):
                inhibited = on
                visible.append(output)
            case .stageCalibration(let session):
                visible.append(output)
                let staged: Result<StagedCalibration, TeachFailure> = stageFailure.map { .failure($0) } ?? .success(StagedCalibration(
                    record: Occurrence.TeachCommitRecord(
                        source: core.settings.source, currency: session.request.currency, code: session.request.code,
                        samples: session.samples.count, leftOut: 0, file: session.request.file, sha256: "f00d", axes: [:], by: ""),
                    stagedPath: session.request.file + ".staged"))
                visible += carryOut(core.step(.calibrationStaged(staged), at: now, decide: decider))
            case .installCalibration(let staged):
                visible.append(output)
                if installFailure == nil { installed.append(staged) }
                let outcome: Result<StagedCalibration, TeachFailure> = installFailure.map { .failure($0) } ?? .success(staged)
                visible += carryOut(core.step(.calibrationInstalled(outcome), at: now, decide: decider))
            case .discardCalibration(let staged):
                discarded.append(staged)
                visible.append(output)
            case .failpoint:
                break
            default:
                visible.append(output)
            }
        }
        return visible
    }

    static func reading(_ seq: UInt64, sentAt: Instant, diameter: Double = 24.26, weight: Double? = 5.67) -> MechEvent {
        .reading(MechReading(deviceSeq: seq, measurement: Measurement(diameterMM: diameter, weightG: weight, thicknessMM: nil, channel: nil), sentAt: sentAt))
    }
}

extension [CoreOutput] {
    var answers: [(UInt64, Bool)] {
        compactMap { if case .answer(let seq, let accept) = $0 { return (seq, accept) }; return nil }
    }

    var queries: [(UInt64, UInt64)] {
        compactMap { if case .query(let boot, let seq) = $0 { return (boot, seq) }; return nil }
    }

    /// The outcomes of the operator's commands, in order.
    var replies: [CommandOutcome] {
        compactMap { if case .reply(_, let outcome) = $0 { return outcome }; return nil }
    }
}
