import CoinMechChain
import CoinMechCore

extension Chain {
    /// Its links hung or quarantined, in chain order, as the core's plugin health review takes them.
    var outOfService: [PluginHealthReview.OutOfService] {
        problems.compactMap { link, problem in
            guard problem.state == .hung || problem.state == .quarantined else { return nil }
            return PluginHealthReview.OutOfService(
                link: link.name, state: "\(problem.state)", cause: problem.cause, reason: problem.reason, since: problem.since,
                plugin: link.origin.plugin, sha256: link.origin.sha256)
        }
    }
}
