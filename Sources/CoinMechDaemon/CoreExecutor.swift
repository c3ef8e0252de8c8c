import CoinMechCalibration
import CoinMechCCTalk
import CoinMechChain
import CoinMechCore
import CoinMechFailpoints
import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
import CoinMechPublisher
import CoinMechSources
import CoinMechTeach
import Foundation
import Logging
import Synchronization

/// The daemon's one executor: it steps the three pure cores — `DecidingCore` (a mech's readings),
/// `AcceptorCore` (the batches of a coin acceptor or changer), `PayoutCore` (money out) — and
/// carries out what they ask, in order, stepping every outcome straight back into the core that
/// asked before anything else: a commit's, a journal append's, a DISPENSE's, a ledger read's.
/// So "durable before answered", "answered before published" and "journalled before any coin
/// moves" are properties of the cores' output order; here things are only moved.
///
/// It is the ledger's only writer and the hub's only publisher, and owns the cores' state. It
/// runs on the deciding loop's thread and nowhere else; `status` is what other threads read.
final class CoreExecutor {
    typealias Completion = DecidingLoop.Completion

    private(set) var deciding: DecidingCore
    private(set) var acceptor: AcceptorCore?
    private(set) var payout: PayoutCore?
    /// The customer's credit (`CreditCore`): set by `CoreExecutor+Credit`.
    var credit: CreditCore?
    /// The commands the credit core answers, by ticket (their reply names them), and the
    /// payouts it asked for a cancel, whose answers go back to it.
    var creditCommands: [Ticket: CreditCommand] = [:]
    var creditPayouts: Set<Ticket> = []
    /// The payout core's answers to the credit core, held until the payout core's outputs are
    /// all carried out: stepped in mid-list, the credit core could ask a payout of a core still
    /// awaiting a step-back (an `open` answer comes before its recount's commit).
    private var creditAnswersWaiting: [PayoutAnswer] = []
    private var payoutDepth = 0
    let mech: any Mech
    private let confirming: (any ConfirmingMech)?
    let acceptorMech: (any AcceptorMech)?
    let payingMech: (any PayingMech)?
    /// The coin positions the operator allows (`source.positions`), for a coin acceptor.
    private let operatorPositions: CoinPositionMask?
    let decider: ChainDecider
    let ledger: Ledger
    let hub: EventHub
    let logger: Logger
    let failpoints: Failpoints
    /// Where teach mode's calibration files may be written, and how.
    private let stateDirectory: String
    private let calibrations: CalibrationFiles
    /// Where fresh decisions are made durable before they are answered (a mech that confirms
    /// its coins); nil: every batch is committed to the ledger before it is answered.
    private let decisionJournal: DecisionJournal?
    /// Pages the ledger could still take at its last commit (nil: it has no size limit). Near
    /// its limit a batch is committed before it is answered: an accept answered from the
    /// journal must not meet a ledger that cannot take it.
    private var ledgerPagesLeft: Int?
    /// Commits slower than the answer plan allows (a source with a deadline only).
    private var commitSpeed: CommitSpeedWatch?
    /// Operators' commands waiting for a core's reply, with the chain a reload would swap in.
    private var tickets: [Ticket: (completion: Completion, chain: Chain?)] = [:]
    private var nextTicket: UInt64 = 0
    /// What `status` shows, refreshed after each turn, each inhibit and before each reply.
    let status = Mutex(DecidingLoop.Status())

    struct Parts {
        var deciding: DecidingCore
        var acceptor: AcceptorCore?
        var payout: PayoutCore?
        var credit: CreditCore?
        var mech: any Mech
        var payingMech: (any PayingMech)?
        var operatorPositions: CoinPositionMask?
        var decisionJournal: DecisionJournal?
        var commitSpeed: CommitSpeedWatch?
    }

    init(_ parts: Parts, decider: ChainDecider, ledger: Ledger, hub: EventHub, logger: Logger, failpoints: Failpoints, stateDirectory: String) {
        deciding = parts.deciding
        acceptor = parts.acceptor
        payout = parts.payout
        credit = parts.credit
        mech = parts.mech
        confirming = parts.mech as? any ConfirmingMech
        acceptorMech = parts.mech as? any AcceptorMech
        payingMech = parts.payingMech
        operatorPositions = parts.operatorPositions
        decisionJournal = parts.decisionJournal
        commitSpeed = parts.commitSpeed
        self.decider = decider
        self.ledger = ledger
        self.hub = hub
        self.logger = logger
        self.failpoints = failpoints
        self.stateDirectory = stateDirectory
        calibrations = CalibrationFiles(source: decider.sourceName)
    }

    /// Names an operator's command until a core replies to it.
    func ticket(_ completion: @escaping Completion, chain: Chain? = nil) -> Ticket {
        let ticket = freshTicket()
        tickets[ticket] = (completion, chain)
        return ticket
    }

    /// A ticket no operator waits on: one core's request to another (a cancel's payout).
    func freshTicket() -> Ticket {
        nextTicket += 1
        return Ticket(nextTicket)
    }

    /// Answers the operator waiting on `ticket`.
    func complete(_ ticket: Ticket, _ result: Result<JSON, CommandError>) {
        tickets.removeValue(forKey: ticket)?.completion(result)
    }

    func publishStatus() {
        var snapshot = DecidingLoop.Status(connected: mech.isConnected, disconnectedReason: mech.disconnectedReason, core: deciding.snapshot)
        snapshot.payout = payout?.snapshot
        if let acceptor, let acceptorMech {
            snapshot.acceptor = AcceptorStatus(device: acceptorMech.deviceStatus, counts: acceptor.counts, ledgerFailure: acceptor.ledgerFailure,
                                               levels: snapshot.payout?.levels ?? [])
        }
        status.withLock { $0 = snapshot }
    }

    // MARK: The deciding core

    /// What the deciding core asks at the start (coins a source that no longer confirms can
    /// never settle).
    func startDeciding() {
        carryOut(deciding.start(now: .now))
    }

    func stepDeciding(_ input: CoreInput) {
        carryOut(deciding.step(input, at: .now, decide: decider.decide))
    }

    /// Carries out the deciding core's outputs in order; a commit's outcome goes straight back in.
    private func carryOut(_ outputs: [CoreOutput]) {
        for output in outputs {
            switch output {
            case .commit(let entries, let busyTimeout):
                let milliseconds = Int(busyTimeout.nanoseconds / 1_000_000)
                do throws(LedgerError) {
                    let started = Instant.now
                    let result = try ledger.append(entries, busyTimeoutMilliseconds: milliseconds)
                    noteCommit(took: .now - started)
                    if decisionJournal != nil, !result.events.isEmpty { ledgerPagesLeft = ledger.pagesLeft() }
                    stepDeciding(.committed(result))
                } catch {
                    stepDeciding(.commitFailed(error))
                }
            case .commitJournalled(let entries):
                do throws(LedgerError) {
                    // At the time the journal wrote with them: a replay records the same events.
                    let result = try ledger.append(entries, synced: false, time: decisionJournal?.lastAppendTime)
                    ledgerPagesLeft = ledger.pagesLeft()
                    stepDeciding(.committed(result))
                } catch {
                    // The journal keeps these decisions until the commit that ends the failure.
                    stepDeciding(.commitFailed(error))
                }
            case .journal(let records):
                do throws(LedgerError) {
                    guard let decisionJournal else { throw .write(message: "this source keeps no decision journal") }
                    // A page a decision, and room to spare: far more than one takes.
                    if let left = ledgerPagesLeft ?? ledger.pagesLeft(), left < Self.journalHeadroomPages + records.count {
                        stepDeciding(.journalDeclined)
                        continue
                    }
                    try decisionJournal.append(records)
                    stepDeciding(.journalled)
                } catch {
                    stepDeciding(.journalFailed("\(error)"))
                }
            case .trimJournal:
                // The core sends it only after a synced commit has made the journal's lines durable.
                decisionJournal?.trim()
            case .answer(let seq, let accept):
                if !mech.answer(deviceSeq: seq, accept: accept) {
                    logger.warning("could not answer the mech", metadata: ["devseq": "\(seq)", "accept": "\(accept)"])
                }
            case .query(let boot, let seq):
                if confirming?.query(boot: boot, deviceSeq: seq) == true {
                    logger.debug("asked the mech about a pending coin", metadata: ["boot": "\(boot)", "devseq": "\(seq)"])
                }
            case .askSession:
                confirming?.askSession()
            case .setInhibit(let on):
                mech.setInhibit(on)
                serviceAcceptor()
                publishStatus()
            case .publish(let events):
                hub.publish(events)
            case .swapChain(let ticket):
                if let new = tickets[ticket]?.chain {
                    decider.chain.swap(new)
                    allowAcceptorPositions()
                }
            case .reply(let ticket, let outcome):
                publishStatus()
                tickets.removeValue(forKey: ticket)?.completion(OperatorReplies.reply(outcome))
            case .failpoint(let point):
                failpoints.hit(point)
            case .stageCalibration(let session):
                stepDeciding(.calibrationStaged(stage(session)))
            case .installCalibration(let staged):
                stepDeciding(.calibrationInstalled(calibrations.install(staged)))
            case .discardCalibration(let staged):
                calibrations.discard(staged)
            }
        }
    }

    /// Pages a ledger with a size limit keeps free beyond a page per decision before a batch
    /// may be answered from the decision journal.
    static let journalHeadroomPages = 16

    /// Every commit is synced (docs/LEDGER.md): on storage slower than the commit allowance,
    /// accepts reach the mech late and it returns the coins. The operator hears of it.
    private func noteCommit(took: Duration) {
        guard let warning = commitSpeed?.committed(took: took, at: .now) else { return }
        logger.warning("the ledger's storage is too slow for the mech's deadline: accepts reach the mech late and it returns those coins; give the state directory faster storage, or raise source.commit_allowance_ms if the deadline leaves room", metadata: [
            "state_dir": "\(stateDirectory)", "slowest_commit_ms": "\(Self.milliseconds(warning.slowest))",
            "commit_allowance_ms": "\(Self.milliseconds(warning.allowance))", "slow_commits": "\(warning.slowCommits)",
        ])
    }

    private static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1f", Double(seconds) * 1e3 + Double(attoseconds) / 1e15)
    }

    /// Writes a teach session's calibration beside its file, on the link it was started for:
    /// a chain reloaded meanwhile must still read that file.
    private func stage(_ session: TeachSession) -> Result<StagedCalibration, TeachFailure> {
        let request = session.request
        let chain = decider.chain.current
        switch TeachTarget.resolve(currency: request.currency, code: request.code, chain: chain, source: decider.sourceName, stateDirectory: stateDirectory) {
        case .failure(let failure):
            return .failure(TeachFailure("the chain changed while teaching: \(failure.message)"))
        case .success(let target) where target.link != request.link || target.file != request.file:
            return .failure(TeachFailure("the chain changed while teaching: \(request.currency) is now taught through link '\(target.link)' "
                + "reading \(target.file), not '\(request.link)' reading \(request.file); abort and teach again"))
        case .success(let target):
            return calibrations.stage(TeachReport(session: session, table: target.table, minimumSamples: deciding.settings.teachMinimumSamples))
        }
    }

    // MARK: The acceptor core

    /// Records what an acceptor's engine (ccTalk, MDB) reported, each batch in one transaction
    /// with its counter row, before anything of it is published or the engine goes on.
    func serviceAcceptor() {
        guard let acceptorMech, acceptor != nil else { return }
        let reports = acceptorMech.takeReports()
        for report in reports { log(report) }
        stepAcceptor(.reported(reports.compactMap(\.event)))
    }

    private func stepAcceptor(_ input: AcceptorInput) {
        guard var core = acceptor, let acceptorMech else { return }
        let outputs = core.step(input, at: .now, decide: decider.decideCoin)
        acceptor = core
        for output in outputs {
            switch output {
            case .commit(let commit):
                do throws(LedgerError) {
                    if let change = commit.change {
                        stepAcceptor(.committed(try ledger.append(commit.entries, moving: change)))
                    } else {
                        stepAcceptor(.committed(.applied(try ledger.append(commit.entries))))
                    }
                } catch {
                    stepAcceptor(.commitFailed(error))
                }
            case .publish(let events):
                hub.publish(events)
            case .rewind(let counter):
                acceptorMech.rewind(to: counter)
            case .notRecorded:
                acceptorMech.notRecorded()
            case .failpoint(let point):
                failpoints.hit(point)
            }
        }
    }

    /// Enables the positions the operator allows and the chain can credit (after a reload
    /// swapped a chain in).
    private func allowAcceptorPositions() {
        guard let acceptorMech, let allowed = operatorPositions else { return }
        acceptorMech.allow(allowed, creditable: ChainDecider.creditableCoinIDs(decider.chain.current, logger: logger))
        serviceAcceptor()
    }

    private func log(_ report: AcceptorReport) {
        switch report.level {
        case .debug: logger.debug("\(report.message)")
        case .notice: logger.notice("\(report.message)")
        case .warning: logger.warning("\(report.message)")
        case .critical: logger.critical("\(report.message)")
        }
    }

    // MARK: The payout core

    /// What the core asks before the device is set up (a device with payouts left open is held).
    func startPayout() {
        guard let core = payout else { return }
        carryOut(core.start())
    }

    /// What the paying device says now, and the DISPENSEs it counted: every turn.
    func servicePayout() {
        guard payout != nil, let payingMech else { return }
        stepPayout(.device(payingMech.payingState, dispensed: payingMech.takeDispensed()))
    }

    func stepPayout(_ input: PayoutInput) {
        guard var core = payout else { return }
        let outputs = core.step(input, at: .now)
        payout = core
        payoutDepth += 1
        carryOut(outputs)
        payoutDepth -= 1
        // Outermost: the payout core awaits nothing now, and may be asked again.
        while payoutDepth == 0, !creditAnswersWaiting.isEmpty {
            stepCredit(.payoutAnswered(creditAnswersWaiting.removeFirst()))
        }
    }

    /// A payout is under way: a stopping daemon counts and settles it first.
    var isPaying: Bool { payout?.isPaying == true }

    private func carryOut(_ outputs: [PayoutOutput]) {
        guard let mech = payingMech else { return }
        for output in outputs {
            switch output {
            case .hold(let on):
                mech.holdForPayout(on)
            case .count:
                mech.countUnits()
            case .dispense(let type, let count):
                stepPayout(.dispenseSent(mech.dispense(type: type, count: count)))
            case .payValue(let valueMinor):
                stepPayout(.dispenseSent(mech.payValue(valueMinor)))
            case .askAccount(let record):
                stepPayout(.account(mech.restartAccount(record)))
            case .lookUp(let requestID, let moves):
                stepPayout(.lookedUp(Result { () throws(LedgerError) in
                    PayoutLookup(payout: requestID.isEmpty ? nil : try ledger.payout(requestID: requestID),
                                 operatorChange: requestID.isEmpty ? nil : try ledger.operatorInventoryChange(requestID: requestID),
                                 counted: moves.isEmpty ? [] : try ledger.counted(moves))
                }))
            case .commit(let entries):
                do throws(LedgerError) {
                    let result = try ledger.append(entries)
                    // A disk error after the commit landed (a test's failpoint): the core reads it back.
                    if entries.contains(where: \.isPayoutMove), failpoints.fails(.payoutMovesCommitted) {
                        throw .write(message: "failpoint payout-moves-committed: the commit landed, and is reported failed")
                    }
                    if entries.contains(where: \.isOperatorInventory), failpoints.fails(.inventoryCommitted) {
                        throw .write(message: "failpoint inventory-committed: the commit landed, and is reported failed")
                    }
                    stepPayout(.committed(result))
                } catch {
                    stepPayout(.commitFailed(error))
                }
            case .publish(let events):
                hub.publish(events)
            case .reply(let ticket, let answer):
                if creditPayouts.remove(ticket) != nil {
                    creditAnswersWaiting.append(answer)
                    continue
                }
                publishStatus()
                tickets.removeValue(forKey: ticket)?.completion(OperatorReplies.reply(answer))
            case .failpoint(let point):
                failpoints.hit(point)
            }
        }
    }
}

extension LedgerEntry {
    /// What a payout step paid, by a hopper's own account.
    fileprivate var isPayoutMove: Bool {
        if case .inventory(let change) = self, case .paid = change.kind { return true }
        return false
    }

    /// An operator's refill or float.
    fileprivate var isOperatorInventory: Bool {
        if case .inventory(let change) = self, change.kind.operatorRequestID != nil { return true }
        return false
    }
}
