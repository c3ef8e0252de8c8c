import CoinMechModel

/// What the deciding loop tells its core about the chain's links' health, once per turn: a link
/// newly hung or quarantined is recorded (`quarantined`) and inhibits the mech; one put back by a
/// reload is recorded (`quarantine_lifted`). Links restarting their plugin host inhibit nothing: their
/// readings are returned one by one.
public struct PluginHealthReview: Sendable {
    /// A link out of service, as the chain reports it (the shell reads it off the chain).
    public struct OutOfService: Sendable, Hashable {
        public var link: String
        /// `hung` or `quarantined`.
        public var state: String
        public var cause: String
        public var reason: String
        /// When it went out of service (wall clock, seconds): a new outage of the same link is
        /// recorded again.
        public var since: Double
        public var plugin: String
        public var sha256: String

        public init(link: String, state: String, cause: String, reason: String, since: Double, plugin: String, sha256: String) {
            self.link = link
            self.state = state
            self.cause = cause
            self.reason = reason
            self.since = since
            self.plugin = plugin
            self.sha256 = sha256
        }
    }

    public struct Outcome: Sendable {
        /// What to record and publish.
        public var record: [Occurrence] = []
        /// Why the mech must stay inhibited (the first link out of service), or nil.
        public var inhibit: String?
    }

    /// The outages recorded so far, by link name.
    private var recorded: [String: OutOfService] = [:]

    public init() {}

    /// Why links out of service (in chain order) keep the mech inhibited: the first of them.
    public static func inhibitReason(_ links: [OutOfService]) -> String? {
        links.first.map { "link '\($0.link)' is \($0.state): \($0.reason)" }
    }

    /// `links`: the chain's links out of service, in chain order; `generation`: the chain's.
    public mutating func review(_ links: [OutOfService], generation: UInt64) -> Outcome {
        var outcome = Outcome(inhibit: Self.inhibitReason(links))
        var current: [String: OutOfService] = [:]
        for link in links {
            current[link.link] = link
            guard recorded[link.link] != link else { continue }
            outcome.record.append(.quarantined(.init(
                link: link.link, state: link.state, cause: link.cause, reason: link.reason,
                generation: generation, plugin: link.plugin, sha256: link.sha256)))
        }
        for name in recorded.keys.sorted() where current[name] == nil {
            outcome.record.append(.quarantineLifted(link: name, generation: generation))
        }
        recorded = current
        return outcome
    }
}
