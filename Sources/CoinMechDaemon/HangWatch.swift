import CLinux
import CoinMechChain
import CoinMechConfiguration
import CoinMechPlugins
import CoinMechSupport
import Foundation
import Logging
import Synchronization

/// Watches the deciding thread for an in-process link call that outlasts its budget. The
/// daemon cannot stop code running in its own process, so such a link is marked `hung`: the
/// chain stops calling it, the deciding loop inhibits the mech once the call returns, and the
/// quarantine is written at once, so a daemon the watchdog has to kill restarts into it.
///
/// It costs the deciding path the breadcrumb's two stores and one `timerfd_settime` per
/// in-process call, and one per walk: `Chain` arms the breadcrumb's hang timer with each call's
/// budget. This thread sleeps on the timer, so while calls keep within their budgets it never
/// wakes, and a reading wakes nothing but the deciding thread.
final class HangWatch: Sendable {
    private let breadcrumb: PluginBreadcrumb
    private let chain: ChainHolder
    private let quarantine: QuarantineStore
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let wakePipe = WakePipe()

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
        stopping.store(true, ordering: .sequentiallyConsistent)
        wakePipe.wake()
    }

    private func run() {
        let slot = breadcrumb.decidingSlot
        let timer = breadcrumb.hangTimer
        var flagged: UInt64 = 0
        while !stopping.load(ordering: .sequentiallyConsistent) {
            var descriptors = [pollfd(fd: timer, events: Int16(POLLIN), revents: 0), pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0)]
            guard poll(&descriptors, 2, -1) > 0, descriptors[0].revents != 0 else { continue }
            // The same word before and after reading an expiration: the call that armed the
            // timer is still running, past its budget.
            let word = cm_crumb_load(slot)
            let expired = cm_hang_timer_expirations(timer) > 0
            guard expired, word != 0, cm_crumb_load(slot) == word, word != flagged, stillRunning(word, slot: slot),
                  let link = link(for: word), link.policy.isolation == .inProcess, !link.health.blocksCalls else { continue }
            flagged = word
            markHung(link, word: word)
        }
    }

    /// Looks again a little later: a process that was stopped (SIGSTOP, a paused machine) finds
    /// its timer expired on resuming, but the call it interrupted then finishes at once. A call
    /// still there after a look this thread was not held up in is hung.
    private func stillRunning(_ word: UInt64, slot: UnsafeMutablePointer<cm_crumb_slot>) -> Bool {
        let period = samplePeriodMicroseconds()
        var last = cm_monotonic_ns()
        while !stopping.load(ordering: .relaxed), cm_crumb_load(slot) == word {
            usleep(useconds_t(period))
            let now = cm_monotonic_ns()
            let heldUp = now &- last > 4 * period * 1000 + 5_000_000
            last = now
            if !heldUp && cm_crumb_load(slot) == word { return true }
        }
        return false
    }

    /// How long the second look waits: a quarter of the smallest in-process budget, 1 to 50 ms.
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

    private func markHung(_ link: ChainLink, word: UInt64) {
        let budget = String(format: "%g", Double(link.policy.budgetNanoseconds) / 1e6)
        let problem = LinkHealth.Problem(
            state: .hung, cause: "over_budget",
            reason: "a call in process took more than its \(budget) ms budget; "
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
