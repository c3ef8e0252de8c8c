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
///
/// An expired timer is not yet a hang: the budget is of the call's own time, not the wall
/// clock's. A machine busy elsewhere (a boot, a starved virtual machine) holds a healthy call
/// past its budget while it waits for a CPU, or for its code to be read from a cold disk
/// after a power cut, and marking its link hung would inhibit the mech until an operator
/// reloads. So the watch looks on until the call has had one more whole
/// budget of its own time (`ThreadTime`): a call that fits its budget finishes within that
/// however long it waited, and a hung one is marked after about twice its budget.
final class HangWatch: Sendable {
    private let breadcrumb: PluginBreadcrumb
    private let chain: ChainHolder
    private let quarantine: QuarantineStore
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let wakePipe = WakePipe()
    private let decidingThread = Mutex<ThreadTime?>(nil)

    init(breadcrumb: PluginBreadcrumb, chain: ChainHolder, quarantine: QuarantineStore, logger: Logger) {
        self.breadcrumb = breadcrumb
        self.chain = chain
        self.quarantine = quarantine
        self.logger = logger
    }

    /// Called on the deciding thread as it starts: the thread whose time the watch judges.
    func watchDecidingThread() {
        let thread = ThreadTime.current()
        decidingThread.withLock { $0 = thread }
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
            guard expired, word != 0, cm_crumb_load(slot) == word, word != flagged,
                  let link = link(for: word), link.policy.isolation == .inProcess, !link.health.blocksCalls,
                  overran(word, slot: slot, budget: link.policy.budgetNanoseconds) else { continue }
            flagged = word
            markHung(link, word: word)
        }
    }

    /// Looks every quarter budget until the call has had one more whole budget of its own time
    /// and is still there. Its own time is its CPU time, and the wall clock while it is asleep
    /// in a call it made (a sleep, a lock, a socket): not the time it waited for a CPU, nor
    /// for the disk (a page of code read in on its first run after a power cut), nor stopped.
    /// Of a look this thread was itself held up in (the process stopped and resumed, a paused
    /// machine, a loaded one), only the CPU time counts. Where the deciding thread cannot be
    /// seen, the wall clock.
    /// A plugin stuck for good waiting on a disk is left to systemd's watchdog, whose abort the
    /// breadcrumb pins on its link.
    private func overran(_ word: UInt64, slot: UnsafeMutablePointer<cm_crumb_slot>, budget: UInt64) -> Bool {
        let period = samplePeriodMicroseconds()
        let thread = decidingThread.withLock { $0 }
        var last = cm_monotonic_ns()
        var lastCPU = thread?.cpuNanoseconds()
        var own: UInt64 = 0
        while !stopping.load(ordering: .relaxed), cm_crumb_load(slot) == word {
            usleep(useconds_t(period))
            let now = cm_monotonic_ns()
            let cpu = thread?.cpuNanoseconds()
            let wall = now &- last
            defer {
                last = now
                lastCPU = cpu
            }
            let cpuSpent = cpu.flatMap { cpu in lastCPU.map { cpu &- $0 } }
            let state = thread?.state()
            if wall <= 4 * period * 1000 + 5_000_000 {
                own += Self.ownTime(wall: wall, cpu: cpuSpent, state: state)
            } else if state != .asleep, let cpuSpent {
                // This thread was held up: the wall clock says nothing, but the CPU time the
                // call used meanwhile is its own all the same.
                own += cpuSpent
            }
            if own >= budget && cm_crumb_load(slot) == word { return true }
        }
        return false
    }

    /// A look's worth of the call's own time: see `overran`.
    static func ownTime(wall: UInt64, cpu: UInt64?, state: ThreadTime.State?) -> UInt64 {
        switch state {
        case .asleep?: wall
        case .runnable?, .uninterruptible?: min(wall, cpu ?? wall)
        case .stopped?: 0
        case nil: wall
        }
    }

    /// How long each look waits: a quarter of the smallest in-process budget, 1 to 50 ms.
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
