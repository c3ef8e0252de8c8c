import CoinMechCCTalk

/// What a ledger does with a ccTalk host's batches, in memory: each batch applies only if it
/// follows from the state stored (as the real ledger's transaction must check), and a credit
/// is keyed by (epoch, number), so a second credit of one event is seen at once.
struct CCTalkTestLedger {
    struct Key: Hashable, Comparable, CustomStringConvertible {
        var epoch: UInt64
        var number: UInt64
        static func < (a: Key, b: Key) -> Bool { (a.epoch, a.number) < (b.epoch, b.number) }
        var description: String { "epoch \(epoch) event \(number)" }
    }

    private(set) var state: CCTalkCounterState?
    private(set) var credits: [CCTalkBufferedEvent] = []
    private(set) var creditCount: [Key: Int] = [:]
    private(set) var backlog: [CCTalkBufferedEvent] = []
    private(set) var errors: [(CCTalkBufferedEvent, CoinAcceptorError)] = []
    private(set) var lost: [Key] = []
    private(set) var restarts: [CCTalkRestartCause] = []
    /// Batches that did not follow from the stored state (already applied, or stale).
    private(set) var stale = 0
    /// Set to make the next commits fail, as a full disk would.
    var failing = false

    init(state: CCTalkCounterState? = nil) { self.state = state }

    /// Applies `batch` in one "transaction"; false if it did not apply.
    mutating func commit(_ batch: CCTalkLedgerBatch) -> Bool {
        guard !failing else { return false }
        guard batch.before == state else {
            stale += 1
            return false
        }
        for entry in batch.entries {
            switch entry {
            case .credit(let event):
                credits.append(event)
                creditCount[Key(epoch: event.epoch, number: event.number), default: 0] += 1
            case .backlog(let event): backlog.append(event)
            case .error(let event, let error): errors.append((event, error))
            case .invalid: break
            case .lost(let epoch, let numbers): lost += numbers.map { Key(epoch: epoch, number: $0) }
            case .restarted(_, let cause): restarts.append(cause)
            }
        }
        state = batch.after
        return true
    }

    var creditKeys: [Key] { credits.map { Key(epoch: $0.epoch, number: $0.number) } }
    var doubled: [Key] { creditCount.filter { $0.value > 1 }.map(\.key).sorted() }
}
