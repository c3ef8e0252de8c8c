import CLinux
import CoinMechChain
import CoinMechConfiguration
import CoinMechPlugins
import CoinMechSupport
import Foundation
import Logging
import Synchronization

/// Watches the deciding thread's breadcrumb for an in-process link call that outlasts its
/// budget. The daemon cannot stop code running in its own process, so such a link is marked
/// `hung`: the chain stops calling it, the deciding loop inhibits the mech once the call returns,
/// and the quarantine is written at once, so a daemon the watchdog has to kill restarts into it.
///
/// It costs the deciding path nothing but the breadcrumb's two stores per link: this thread
/// samples the slot every few milliseconds while readings are being decided, and sleeps on a
/// futex in the slot otherwise (the first walk after a quiet spell wakes it).
final class HangWatch: Sendable {
    private let breadcrumb: PluginBreadcrumb
    private let chain: ChainHolder
    private let quarantine: QuarantineStore
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)

    /// How long to keep sampling after the last call before parking.
    static let lingerNanoseconds: UInt64 = 250_000_000
    /// The longest park: the first call (or `stop`) wakes the thread sooner. An idle daemon's
    /// hang watch wakes once per this period.
    static let parkNanoseconds: UInt64 = 10_000_000_000

    init(breadcrumb: PluginBreadcrumb, chain: ChainHolder, quarantine: QuarantineStore, logger: Logger) {
        self.breadcrumb = breadcrumb
        self.chain = chain
        self.quarantine = quarantine
        self.logger = logger
    }

    func start() {
        _ = Thread.startNamed("hang-watch") { [self] in run() }
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        cm_crumb_wake(breadcrumb.decidingSlot)
    }

    private func run() {
        let slot = breadcrumb.decidingSlot
        var call: (word: UInt64, since: UInt64)?
        var flagged: UInt64 = 0
        var lastActivity = cm_monotonic_ns()
        var lastSample = lastActivity
        while !stopping.load(ordering: .relaxed) {
            let now = cm_monotonic_ns()
            let word = cm_crumb_load(slot)
            // This thread was held up too (the whole process stopped, the machine paused): the
            // time that passed is not the plugin's. Count the call from now.
            if now &- lastSample > 4 * samplePeriodMicroseconds() * 1000 + 5_000_000, let current = call { call = (current.word, now) }
            lastSample = now
            guard word != 0 else {
                call = nil
                if now &- lastActivity > Self.lingerNanoseconds {
                    cm_crumb_park(slot, Self.parkNanoseconds)
                    lastSample = cm_monotonic_ns()
                    // Woken by a call: linger, sampling, as after any call. A park that ran out
                    // its time saw nothing, and parks again at once.
                    if lastSample &- now < Self.parkNanoseconds { lastActivity = lastSample }
                } else {
                    usleep(useconds_t(samplePeriodMicroseconds()))
                }
                continue
            }
            lastActivity = now
            if call?.word != word {
                call = (word, now)
            } else if let since = call?.since, word != flagged, let link = link(for: word), link.policy.isolation == .inProcess,
                      !link.health.blocksCalls, now &- since >= link.policy.budgetNanoseconds {
                flagged = word
                markHung(link, word: word, elapsed: now &- since)
            }
            usleep(useconds_t(samplePeriodMicroseconds()))
        }
    }

    /// A quarter of the smallest in-process budget, between 1 and 50 ms.
    private func samplePeriodMicroseconds() -> UInt64 {
        let budgets = chain.current.links.filter { $0.policy.isolation == .inProcess }.map(\.policy.budgetNanoseconds)
        return min(50_000, max(1_000, (budgets.min() ?? LinkPolicy.defaultBudgetNanoseconds) / 4_000))
    }

    /// The link a breadcrumb word names, in the chain deciding now.
    private func link(for word: UInt64) -> ChainLink? {
        guard let decoded = PluginBreadcrumb.decode(word), decoded.phase == .validate else { return nil }
        let current = chain.current
        guard current.generation & 0xFF_FFFF == decoded.generation, current.links.indices.contains(decoded.index) else { return nil }
        return current.links[decoded.index]
    }

    private func markHung(_ link: ChainLink, word: UInt64, elapsed: UInt64) {
        let budget = String(format: "%g", Double(link.policy.budgetNanoseconds) / 1e6)
        let problem = LinkHealth.Problem(
            state: .hung, cause: "over_budget",
            reason: "a call in process took more than \(String(format: "%.0f", Double(elapsed) / 1e6)) ms, over its \(budget) ms budget; "
                + "the daemon cannot stop code in its own process: run this link with `isolation: process`, then reload")
        if let index = PluginBreadcrumb.decode(word)?.index, let identity = breadcrumb.link(generation: chain.current.generation, index: index),
           let failure = quarantine.add(QuarantineRecord(link: identity, problem: problem)) {
            logger.error("cannot record the hung link's quarantine", metadata: ["link": "\(link.name)", "error": "\(failure)"])
        }
        link.health.mark(problem)
        logger.critical("link hung: \(problem.reason); its reading is returned at the mech's deadline and the mech is inhibited",
                        metadata: ["link": "\(link.name)"])
    }
}
