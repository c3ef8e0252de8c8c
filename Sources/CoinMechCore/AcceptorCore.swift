import CoinMechModel

/// The money rules of a coin acceptor (a ccTalk acceptor, an MDB changer), with no I/O, in the
/// deciding core's shape: `step(input, at:)` returns what to do, and the shell steps each
/// commit's outcome straight back in before anything else. What its driver reports becomes
/// ledger entries, and each buffer batch one transaction with the counter state that yielded it
/// (`AcceptorCommit`); nothing of a batch is published, and the engine does not go on, before
/// the ledger holds it.
///
/// - A credit event is passed through the chain as a coin id: an accept credits it (a
///   decision credited at once, named by its epoch and event number); anything else records
///   it as `coin_uncredited` (the acceptor has already taken it: it cannot be returned).
/// - Error, invalid, backlog, lost and restart entries, faults and identifications become
///   acceptor events. Those not tied to a batch go with the next commit; when one fails, they
///   are carried to the one after.
public struct AcceptorCore: Sendable {
    public let source: String
    public let address: UInt8
    public private(set) var counts = AcceptorCounts()
    /// Why the last commit failed, until one succeeds.
    public private(set) var ledgerFailure: String?
    /// Events to record with the next commit.
    private var carried: [Occurrence] = []
    /// Reported events not yet taken in (those after a batch wait for its outcome).
    private var queue: [AcceptorEvent] = []
    /// The commit whose outcome is awaited.
    private var awaiting: AcceptorCommit?
    private let logger: CoreLogger

    public init(source: String, address: UInt8, logger: CoreLogger = .discarding) {
        self.source = source
        self.address = address
        self.logger = logger
    }

    /// Takes one input at `now` and returns what to do, in order. `decide` asks the chain.
    public mutating func step(_ input: AcceptorInput, at now: Instant, decide: (Coin) -> Decided) -> [AcceptorOutput] {
        switch input {
        case .reported(let events):
            precondition(awaiting == nil, "a new report while a commit's outcome is awaited")
            queue += events
            return drain(decide: decide, notes: true)
        case .committed(let outcome):
            guard let commit = awaiting.take() else { preconditionFailure("a commit outcome with no commit awaited") }
            return written(commit, outcome) + drain(decide: decide, notes: true)
        case .commitFailed(let error):
            guard let commit = awaiting.take() else { preconditionFailure("a commit outcome with no commit awaited") }
            // What waits is tried again with the next report, not at once.
            return failed(commit, error) + drain(decide: decide, notes: false)
        }
    }

    /// Takes in the reported events until a commit is to be written; then the events not tied
    /// to a batch, on their own (`notes`).
    private mutating func drain(decide: (Coin) -> Decided, notes: Bool) -> [AcceptorOutput] {
        while !queue.isEmpty {
            if let commit = handle(queue.removeFirst(), decide: decide) { return write(commit) }
        }
        guard notes, let commit = pendingNotes() else { return [] }
        return write(commit)
    }

    private mutating func write(_ commit: AcceptorCommit) -> [AcceptorOutput] {
        awaiting = commit
        return (commit.holdsMoney ? [.failpoint(.beforeCommit)] : []) + [.commit(commit)]
    }

    /// A coin the acceptor took, as the chain is asked about it.
    public struct Coin: Sendable, Equatable {
        public var epoch: UInt64
        public var number: UInt64
        public var position: Int
        public var coinID: String
        public var sorterPath: UInt8
    }

    /// Takes note of what the engine reported; a batch comes back as the commit to write (with
    /// whatever waited), anything else is kept for the next commit (nil then).
    private mutating func handle(_ event: AcceptorEvent, decide: (Coin) -> Decided) -> AcceptorCommit? {
        switch event {
        case .batch(let batch):
            return commit(batch, decide: decide)
        case .note(let record):
            switch record {
            case .fault(let code, let name, let message, _): counts.fault = code == 0 ? "OK" : "fault \(code) (\(name)): \(message)"
            case .faultCleared: counts.fault = nil
            default: break
            }
            carried.append(.acceptor(source: source, record))
        }
        return nil
    }

    /// The events waiting for a commit, as one to write on their own (no batch came).
    private mutating func pendingNotes() -> AcceptorCommit? {
        guard !carried.isEmpty else { return nil }
        defer { carried = [] }
        return AcceptorCommit(entries: carried.map { .note($0) }, change: nil, batch: nil, carried: carried)
    }

    /// `commit` was written (or found the counter moved).
    private mutating func written(_ commit: AcceptorCommit, _ outcome: AcceptorAppend) -> [AcceptorOutput] {
        if ledgerFailure != nil { logger.notice("the acceptor's events are recorded again; it takes coins again") }
        ledgerFailure = nil
        switch outcome {
        case .applied(let result):
            count(commit, result)
            return commit.holdsMoney ? [.failpoint(.afterCommit), .publish(result.events), .failpoint(.published)] : [.publish(result.events)]
        case .counterMoved(let current):
            logger.warning("the ledger's counter of the acceptor moved under the batch; nothing written, going on from it",
                           metadata: ["counter": current.map { "epoch \($0.epoch) event \($0.eventNumber)" } ?? "none"])
            carried = commit.carried + carried
            return [.rewind(to: current)]
        }
    }

    /// `commit` could not be written: nothing of it is on the ledger. The engine holds the
    /// acceptor inhibited and offers its batch again.
    private mutating func failed(_ commit: AcceptorCommit, _ error: LedgerError) -> [AcceptorOutput] {
        // Once an outage: the engine offers the batch again at every poll.
        logger.log(ledgerFailure == nil ? .critical : .debug, "could not record the acceptor's events: it stays inhibited (returning every coin) until the ledger can",
                   metadata: ["error": "\(error)"])
        ledgerFailure = error.description
        carried = commit.carried + carried
        return commit.batch == nil ? [] : [.notRecorded]
    }

    private mutating func commit(_ batch: AcceptorBatch, decide: (Coin) -> Decided) -> AcceptorCommit {
        var entries: [LedgerEntry] = carried.map { .note($0) }
        let waiting = carried
        carried = []
        for entry in batch.entries {
            switch entry {
            case .credit(let credit):
                let coinID = credit.coinID ?? ""
                let decided = decide(Coin(epoch: credit.epoch, number: credit.number, position: credit.position, coinID: coinID,
                                          sorterPath: credit.sorterPath))
                switch decided.verdict {
                case .accept:
                    var record = DecisionRecord(source: source, epoch: Int64(bitPattern: credit.epoch), deviceSeq: credit.number,
                                                diameterMM: nil, weightG: nil, thicknessMM: nil, channel: UInt32(credit.position), verdict: decided.verdict,
                                                link: decided.link, chainGeneration: decided.chainGeneration)
                    record.detail = ["coin_id": coinID, "position": "\(credit.position)", "sorter_path": "\(credit.sorterPath)"]
                    if let routing = credit.routing { record.detail?["routing"] = routing }
                    entries.append(.decision(record, credit: .atOnce))
                case .reject(let reason, let message):
                    entries.append(.note(.acceptor(source: source, .uncredited(
                        epoch: credit.epoch, number: credit.number, position: credit.position, coinID: credit.coinID,
                        reason: reason, message: "\(message) (link \(decided.link)); the acceptor has taken the coin"))))
                }
            case .record(let record):
                entries.append(.note(.acceptor(source: source, record)))
            }
        }
        let change = AcceptorCounterChange(source: source, address: address, before: batch.before, after: batch.after)
        return AcceptorCommit(entries: entries, change: change, batch: batch, carried: waiting)
    }

    private mutating func count(_ commit: AcceptorCommit, _ result: AppendResult) {
        for (entry, outcome) in zip(commit.entries, result.outcomes) {
            guard case .recorded = outcome else {
                if case .duplicate = outcome { counts.duplicates += 1 }
                continue
            }
            switch entry {
            case .decision: counts.credited += 1
            case .note(.acceptor(_, let record)):
                switch record {
                case .uncredited: counts.uncredited += 1
                case .error, .invalid: counts.errorEvents += 1
                case .backlog: counts.backlog += 1
                case .lost(_, let first, let last): counts.lostEvents += Int(last - first + 1)
                case .restarted: counts.restarts += 1
                case .replyLost: counts.lostReplies += 1
                case .fault, .faultCleared, .identified, .tubesCounted: break
                }
            default: break
            }
        }
    }
}

/// One transaction of an acceptor: entries, and the counter move they depend on (none for
/// events not tied to a batch).
public struct AcceptorCommit: Sendable, Equatable {
    public var entries: [LedgerEntry]
    public var change: AcceptorCounterChange?
    /// The engine's batch it records, to hand back if it fails.
    public var batch: AcceptorBatch?
    /// The events not of the batch it carries, kept if it fails.
    var carried: [Occurrence]

    /// A batch with credits: money, passing the money path's failpoints.
    var holdsMoney: Bool { batch?.hasCredits == true }
}

/// What the acceptor core is told.
public enum AcceptorInput: Sendable {
    /// What the acceptor's engine reported, oldest first: at most one batch, whose commit is
    /// settled before the engine is called again.
    case reported([AcceptorEvent])
    /// The `.commit` asked for was written, or found the counter moved.
    case committed(AcceptorAppend)
    /// The `.commit` asked for could not be written: nothing of it is on the ledger.
    case commitFailed(LedgerError)
}

/// What the acceptor core asks its shell to do, in order.
public enum AcceptorOutput: Sendable, Equatable {
    /// Record these entries in one transaction, with the counter move they follow from; then
    /// step with `.committed` or `.commitFailed` before anything else. Always the last output.
    case commit(AcceptorCommit)
    /// Hand recorded events to the clients.
    case publish([LedgerEvent])
    /// The ledger had moved the counter already (the batch was applied before, or another
    /// writer moved it): nothing was written; the engine goes on from where the ledger stands.
    case rewind(to: AcceptorCounter?)
    /// Nothing was written: the engine holds the acceptor inhibited and offers the batch again.
    case notRecorded
    /// Pass this failpoint (tests make the daemon die or stall there).
    case failpoint(Failpoint)
}

extension Optional {
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}

/// What an acceptor's commits recorded since the start, for `status`.
public struct AcceptorCounts: Sendable, Equatable {
    public var credited = 0
    /// Coins the acceptor took that the chain did not credit.
    public var uncredited = 0
    public var errorEvents = 0
    public var backlog = 0
    /// Events lost to buffer overruns: must stay 0.
    public var lostEvents = 0
    public var restarts = 0
    /// Reports lost on the line that the device does not repeat (MDB POLL replies): must stay 0.
    public var lostReplies = 0
    /// Credits already on the ledger (a batch applied twice): must stay 0.
    public var duplicates = 0
    /// The fault the acceptor reports, nil when none.
    public var fault: String?

    public init() {}
}
