import Synchronization

/// Counters of one link. Written by the deciding loop only, read from anywhere.
///
/// Time is sampled: one walk in `Chain.timingSampleInterval` is timed, so the common
/// path pays no clock reads (a clock read costs about as much as a whole link here).
public final class LinkStatistics: Sendable {
    private let accepts = Atomic<UInt64>(0)
    private let rejects = Atomic<UInt64>(0)
    private let passes = Atomic<UInt64>(0)
    private let sampledCalls = Atomic<UInt64>(0)
    private let sampledNanoseconds = Atomic<UInt64>(0)
    private let pluginErrors = Atomic<UInt64>(0)
    private let lastPluginError = Mutex<String?>(nil)
    private let lies = Atomic<UInt64>(0)
    private let lastLie = Mutex<String?>(nil)

    public init() {}

    @inline(__always) func recordAccept() { Self.bump(accepts, 1) }
    @inline(__always) func recordReject() { Self.bump(rejects, 1) }
    @inline(__always) func recordPass() { Self.bump(passes, 1) }
    /// The link answered nonsense (an accept the host cannot credit, an unknown verdict): the
    /// reading was rejected as `plugin_error`. Rare, so it may take a lock.
    func recordPluginError(_ message: String) {
        Self.bump(pluginErrors, 1)
        lastPluginError.withLock { $0 = message }
    }

    /// The link accepted a coin this cabinet does not take (`plugin_lie`); returns how many
    /// lies it has told.
    func recordLie(_ message: String) -> UInt64 {
        Self.bump(lies, 1)
        lastLie.withLock { $0 = message }
        return lies.load(ordering: .relaxed)
    }

    func recordSample(nanoseconds: UInt64) {
        Self.bump(sampledCalls, 1)
        Self.bump(sampledNanoseconds, nanoseconds)
    }

    /// Single-writer increment: a plain load and store, no locked instruction.
    @inline(__always)
    private static func bump(_ counter: borrowing Atomic<UInt64>, _ amount: UInt64) {
        counter.store(counter.load(ordering: .relaxed) &+ amount, ordering: .relaxed)
    }

    /// A copy of the counters for reporting.
    public var snapshot: Snapshot {
        Snapshot(
            accepts: accepts.load(ordering: .relaxed), rejects: rejects.load(ordering: .relaxed),
            passes: passes.load(ordering: .relaxed), sampledCalls: sampledCalls.load(ordering: .relaxed),
            sampledNanoseconds: sampledNanoseconds.load(ordering: .relaxed), pluginErrors: pluginErrors.load(ordering: .relaxed),
            lastPluginError: pluginErrors.load(ordering: .relaxed) == 0 ? nil : lastPluginError.withLock { $0 },
            lies: lies.load(ordering: .relaxed), lastLie: lies.load(ordering: .relaxed) == 0 ? nil : lastLie.withLock { $0 })
    }

    public struct Snapshot: Sendable, Hashable, Codable {
        public var accepts: UInt64
        public var rejects: UInt64
        public var passes: UInt64
        public var sampledCalls: UInt64
        public var sampledNanoseconds: UInt64
        /// Readings this link answered with nonsense (rejected as `plugin_error`), and the last why.
        public var pluginErrors: UInt64 = 0
        public var lastPluginError: String?
        /// Accepts of coins this cabinet does not take (rejected as `plugin_lie`), and the last.
        public var lies: UInt64 = 0
        public var lastLie: String?

        public var calls: UInt64 { accepts + rejects + passes }
        /// Mean time per call over the sampled walks, in nanoseconds.
        public var meanNanoseconds: Double { sampledCalls == 0 ? 0 : Double(sampledNanoseconds) / Double(sampledCalls) }
    }
}
