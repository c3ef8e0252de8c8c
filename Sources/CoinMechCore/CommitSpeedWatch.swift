import CoinMechModel

/// Whether the ledger's storage keeps up with the mech's deadline: every commit is synced, and
/// the answer plan leaves it `commitAllowance`. A commit that takes longer sends the batch's
/// accepts late (the mech returns those coins and says so: no money goes wrong, but the
/// customer gets the coin back). Says so at most once per `interval`, with what it saw since.
public struct CommitSpeedWatch: Sendable, Equatable {
    /// What to tell the operator.
    public struct Warning: Sendable, Equatable {
        /// Commits over the allowance since the last warning (this one included).
        public var slowCommits: Int
        /// The slowest of them.
        public var slowest: Duration
        public var allowance: Duration

        public init(slowCommits: Int, slowest: Duration, allowance: Duration) {
            self.slowCommits = slowCommits
            self.slowest = slowest
            self.allowance = allowance
        }
    }

    public let allowance: Duration
    public let interval: Duration
    private var slowCommits = 0
    private var slowest: Duration = .zero
    private var lastWarning: Instant?

    public init(allowance: Duration, interval: Duration = .seconds(60)) {
        self.allowance = allowance
        self.interval = interval
    }

    /// Notes a commit that took `took`, finished at `now`; a warning when it was over the
    /// allowance and none was given within `interval`.
    public mutating func committed(took: Duration, at now: Instant) -> Warning? {
        guard took > allowance else { return nil }
        slowCommits += 1
        slowest = max(slowest, took)
        if let lastWarning, now - lastWarning < interval { return nil }
        defer {
            slowCommits = 0
            slowest = .zero
            lastWarning = now
        }
        return Warning(slowCommits: slowCommits, slowest: slowest, allowance: allowance)
    }
}
