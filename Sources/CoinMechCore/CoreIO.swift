import CoinMechModel

/// What the deciding core is told. The core never waits and does no I/O: its shell reads the
/// mech and the clock, and hands what happened in here.
public enum CoreInput: Sendable {
    /// What one read of the mech (or a timer of it) produced.
    case mech([MechEvent])
    /// The `commit` the core asked for was recorded.
    case committed(AppendResult)
    /// The `commit` the core asked for failed; nothing was recorded.
    case commitFailed(LedgerError)
    /// The `journal` the core asked for is durable.
    case journalled
    /// The `journal` the core asked for could not be written (why, for people).
    case journalFailed(String)
    /// The shell did not write the `journal`: the ledger is too close to its size limit to be
    /// sure the commit after the answers fits. Nothing wrong: the batch is committed first.
    case journalDeclined
    /// Time passed: queries falling due, the wait for the mech's session, a ledger retry.
    case tick
    /// The operator inhibits the mech or lifts it.
    case inhibit(on: Bool, by: String, ticket: Ticket)
    /// The operator empties the cash box.
    case collect(by: String, ticket: Ticket)
    /// A reloaded chain is built and waits to be recorded and swapped in.
    case reload(Occurrence.ReloadRecord, ticket: Ticket)
    /// A reload could not build its chain.
    case reloadFailed(reason: String, ticket: Ticket)
    /// The chain's links' health changed: why a link out of service keeps the mech inhibited
    /// (nil: none does), and what to record of it (links taken out or put back).
    case pluginHealth(inhibit: String?, record: [Occurrence])
    /// The daemon stops: the mech is let go; these are the line's error counts to record.
    case stop(FrameErrorCounts)
    /// The operator starts teach mode: readings become samples of one denomination, and every
    /// coin is returned.
    case teachStart(TeachRequest, by: String, ticket: Ticket)
    /// The operator commits what was taught: staged, recorded, then put in place.
    case teachCommit(by: String, ticket: Ticket)
    /// The operator ends teach mode without writing anything.
    case teachAbort(by: String, ticket: Ticket)
    /// The outcome of `.stageCalibration`.
    case calibrationStaged(Result<StagedCalibration, TeachFailure>)
    /// The outcome of `.installCalibration`.
    case calibrationInstalled(Result<StagedCalibration, TeachFailure>)
}

/// What the core asks its shell to do, in order.
public enum CoreOutput: Sendable, Equatable {
    /// Record these entries in one transaction, waiting at most `busyTimeout` for another
    /// writer; then step with `.committed` or `.commitFailed` before anything else. Always the
    /// last output of a step.
    case commit([LedgerEntry], busyTimeout: Duration)
    /// Make these decisions durable in the decision journal (`DecisionJournal`): an append
    /// and one sync, before any answer; then step with `.journalled` or `.journalFailed` before
    /// anything else. Always the last output of a step. Their ledger commit follows the answers.
    case journal([DecisionRecord])
    /// Record these decisions, answered from the journal, as `.commit` does but without waiting
    /// for the disk: the journal holds them until a synced commit follows. Then step with
    /// `.committed` or `.commitFailed` before anything else. Always the last output of a step.
    case commitJournalled([LedgerEntry])
    /// Every journalled decision is on the ledger and a synced commit has made them durable
    /// there: the journal may be emptied. It comes after that commit's answers.
    case trimJournal
    /// Tell the mech to keep or return the coin.
    case answer(deviceSeq: UInt64, accept: Bool)
    /// Ask the mech what became of a coin.
    case query(boot: UInt64, deviceSeq: UInt64)
    /// Ask the mech which session it is in.
    case askSession
    case setInhibit(Bool)
    /// Hand recorded events to the clients.
    case publish([LedgerEvent])
    /// Swap in the chain of the reload `ticket` (its record is on disk).
    case swapChain(Ticket)
    /// The outcome of an operator's command.
    case reply(Ticket, CommandOutcome)
    /// Pass this failpoint (tests make the daemon die or stall there).
    case failpoint(Failpoint)
    /// Fit the session's samples and write the calibration beside its file, not yet in place;
    /// then step with `.calibrationStaged` before anything else. Always the last output of a step.
    case stageCalibration(TeachSession)
    /// Rename the staged calibration over its file (its record is on disk); then step with
    /// `.calibrationInstalled` before anything else. Always the last output of a step.
    case installCalibration(StagedCalibration)
    /// Remove a staged calibration that the ledger did not record.
    case discardCalibration(StagedCalibration)
}

/// Names an operator's command until its reply.
public struct Ticket: Sendable, Hashable {
    public let id: UInt64
    public init(_ id: UInt64) { self.id = id }
}

/// How an operator's command ended.
public enum CommandOutcome: Sendable, Equatable {
    case inhibited(on: Bool, seq: Int64)
    case collected(seq: Int64, credited: [TotalsRow], unconfirmed: [TotalsRow])
    case reloaded(Occurrence.ReloadRecord, seq: Int64)
    /// The ledger could not record it (so it did not happen, or, for an inhibit, happened unrecorded).
    case unrecorded(String)
    /// The reload failed; the chain of `generation` keeps deciding.
    case reloadFailed(reason: String, generation: UInt64)
    /// Teach mode started (recorded as `seq`).
    case teaching(TeachSession, seq: Int64)
    /// The taught window is in its file (recorded as `seq`); teach mode has ended.
    case taught(Occurrence.TeachCommitRecord, seq: Int64)
    /// Teach mode ended with nothing written (recorded as `seq`).
    case teachAborted(TeachSession, seq: Int64)
    /// A teach command that does not fit the state: not teaching, already teaching, too few samples.
    case teachRefused(String)
    /// The calibration could not be written or put in place; teach mode goes on.
    case teachFailed(String)
}

/// A reading the core asks its decider about.
public struct Candidate: Sendable {
    public var reading: MechReading
    public var epoch: Int64
}

/// The decider's verdict on a candidate, with the link that decided and the chain's generation.
public struct Decided: Sendable, Equatable {
    public var verdict: DecisionRecord.Verdict
    public var link: String
    public var chainGeneration: UInt64
    /// When the verdict was ready: a slow plugin leaves less of the mech's deadline to answer in.
    public var decidedAt: Instant?

    public init(verdict: DecisionRecord.Verdict, link: String, chainGeneration: UInt64, decidedAt: Instant? = nil) {
        self.verdict = verdict
        self.link = link
        self.chainGeneration = chainGeneration
        self.decidedAt = decidedAt
    }
}

/// What the core has done since start: counts coins, not sentences or answers.
public struct CoreCounters: Sendable, Equatable {
    public var readings: UInt64 = 0
    /// Accepts answered to the mech (credited when it stores them).
    public var accepted: UInt64 = 0
    public var rejected: UInt64 = 0
    /// Coins the mech stored: customer credit.
    public var credited: UInt64 = 0
    public var returnedAfterAccept: UInt64 = 0
    public var unconfirmed: UInt64 = 0
    public var duplicates: UInt64 = 0
    public var protocolErrors: UInt64 = 0
    /// Readings returned for alloy figures that cannot be measurements (`AlloyFault`).
    public var badAlloy: UInt64 = 0
    /// Accepts withdrawn: too late for the mech's deadline.
    public var deadlineWithdrawn: UInt64 = 0
    public var lateAnswers: UInt64 = 0
    public var queries: UInt64 = 0
    public var connects: UInt64 = 0
    public var reconnects: UInt64 = 0
    /// Each decided coin's time from its reading's arrival to its answer.
    public var decisionLatency = LatencyHistogram()

    public init() {}
}
