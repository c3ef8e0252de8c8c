import CoinMechChain
import CoinMechLedger
import CoinMechModel

/// What the deciding loop tells its core about the chain's links' health, once per turn: a link
/// newly hung or quarantined is recorded (`quarantined`) and inhibits the mech; one put back by a
/// reload is recorded (`quarantine_lifted`). Links restarting their plugin host inhibit nothing: their
/// readings are returned one by one.
struct PluginHealthReview {
    /// The problems recorded so far, by link name.
    private var recorded: [String: LinkHealth.Problem] = [:]

    struct Outcome {
        /// What to record and publish.
        var record: [Occurrence] = []
        /// Why the mech must stay inhibited (the first link out of service), or nil.
        var inhibit: String?
    }

    /// Why `chain` keeps the mech inhibited: its first hung or quarantined link.
    static func inhibitReason(_ chain: Chain) -> String? {
        chain.problems.first { $0.problem.state == .hung || $0.problem.state == .quarantined }
            .map { "link '\($0.link.name)' is \($0.problem.state): \($0.problem.reason)" }
    }

    mutating func review(_ chain: Chain) -> Outcome {
        var outcome = Outcome(inhibit: Self.inhibitReason(chain))
        var current: [String: LinkHealth.Problem] = [:]
        for (link, problem) in chain.problems where problem.state == .hung || problem.state == .quarantined {
            current[link.name] = problem
            guard recorded[link.name] != problem else { continue }
            outcome.record.append(.quarantined(.init(
                link: link.name, state: "\(problem.state)", cause: problem.cause, reason: problem.reason,
                generation: chain.generation, plugin: link.origin.plugin, sha256: link.origin.sha256)))
        }
        for name in recorded.keys.sorted() where current[name] == nil {
            outcome.record.append(.quarantineLifted(link: name, generation: chain.generation))
        }
        recorded = current
        return outcome
    }
}
