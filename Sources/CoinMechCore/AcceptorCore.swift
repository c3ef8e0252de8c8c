import CoinMechModel

/// The money rules of a coin acceptor (ccTalk today), with no I/O: what its driver reports
/// becomes ledger entries, and each buffer batch one transaction with the counter state that
/// yielded it (`AcceptorCommit`). The shell writes it, and hands the outcome back before it
/// publishes anything or lets the engine go on.
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

    public init(source: String, address: UInt8) {
        self.source = source
        self.address = address
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
    public mutating func handle(_ event: AcceptorEvent, decide: (Coin) -> Decided) -> AcceptorCommit? {
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
    public mutating func pendingNotes() -> AcceptorCommit? {
        guard !carried.isEmpty else { return nil }
        defer { carried = [] }
        return AcceptorCommit(entries: carried.map { .note($0) }, change: nil, batch: nil, carried: carried)
    }

    /// What the shell must do after writing `commit`.
    public enum Next: Sendable, Equatable {
        /// Stored: hand these events to clients; the engine goes on.
        case publish([LedgerEvent])
        /// The ledger had moved the counter already (the batch was applied before, or another
        /// writer moved it): nothing was written; tell the engine where the ledger stands.
        case rewind(to: AcceptorCounter?)
        /// Nothing was written: tell the engine (`notRecorded`) so it holds the acceptor
        /// inhibited and offers the batch again.
        case retry(AcceptorBatch?)
    }

    /// `commit` was written (or found the counter moved).
    public mutating func written(_ commit: AcceptorCommit, _ outcome: AcceptorAppend) -> Next {
        ledgerFailure = nil
        switch outcome {
        case .applied(let result):
            count(commit, result)
            return .publish(result.events)
        case .counterMoved(let current):
            carried = commit.carried + carried
            return .rewind(to: current)
        }
    }

    /// `commit` could not be written: nothing of it is on the ledger.
    public mutating func failed(_ commit: AcceptorCommit, _ error: LedgerError) -> Next {
        ledgerFailure = error.description
        carried = commit.carried + carried
        return .retry(commit.batch)
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
