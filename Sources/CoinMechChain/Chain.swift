import CLinux
import CoinMechPluginABI
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An immutable, ordered chain of validator links: the first decisive verdict wins, and a
/// terminal link the host adds rejects whatever no link recognised.
///
/// A chain is a snapshot: to change the links, build a new chain and swap it in whole.
/// Links hold their plugin instances, so an old chain keeps its plugins alive until the
/// last reading walking it is done ("ARC is the grace period").
public final class Chain: Sendable {
    /// Name and reason of the terminal link.
    public static var terminalLinkName: String { "unrecognized" }
    /// Names of the host's own pseudo-links in decisions: the source that could not measure a
    /// coin, the operator's inhibit, the mech's deadline, the terminal link. No link may take one.
    public static let reservedLinkNames: Set<String> = ["source", "inhibit", "deadline", "teach", terminalLinkName]
    /// One walk in this many times its links.
    public static let timingSampleInterval: UInt64 = 64

    /// Which chain this is; a reload makes the next generation.
    public let generation: UInt64
    public let links: [ChainLink]
    /// Counters of the terminal link (its rejects are the `unrecognized` coins).
    public let terminalStatistics = LinkStatistics()
    private let walks = Atomic<UInt64>(0)
    /// The links' names, shared with every decision this chain makes.
    private let linkNames: LinkNames
    /// What the walk touches, as plain values: no reference counting while deciding.
    /// Owned by this chain; the validators it points into are kept alive by `links`.
    private nonisolated(unsafe) let table: UnsafeMutableBufferPointer<LinkEntry>
    /// Where each link call is announced: the breadcrumb's deciding slot, or `ownSlot`.
    private nonisolated(unsafe) let slot: UnsafeMutablePointer<cm_crumb_slot>
    /// A slot of this chain's own when it has no breadcrumb (tests, benches, tools).
    private nonisolated(unsafe) let ownSlot: UnsafeMutablePointer<cm_crumb_slot>?
    /// Keeps the breadcrumb mapped as long as the chain writes to it.
    public let breadcrumb: PluginBreadcrumb?
    /// The breadcrumb's hang timer, or -1 without one.
    private let hangTimer: Int32

    private struct LinkEntry {
        let call: ValidatorCall
        unowned(unsafe) let statistics: LinkStatistics
        unowned(unsafe) let health: LinkHealth
        /// `COINMECH_KINDS_*` the link handles.
        let kinds: UInt32
        /// Its breadcrumb word for validate, without the walk's bits.
        let crumb: UInt64
        /// What the hang timer is armed with for its call: its budget in process, 0 when it
        /// is isolated (its supervisor times the call).
        let hangBudget: UInt64
    }

    /// What every accept must be to count (currency, code, value).
    public let acceptPolicy: AcceptPolicy
    /// Lies a link may tell (accepts of coins the cabinet does not take) before it is quarantined.
    public static let maximumLies: UInt64 = 3

    /// `breadcrumb`: where the daemon's deciding thread announces each link call (a crash then
    /// quarantines the link at the next start, and the hang watch sees a call over its budget).
    public init(generation: UInt64, links: [ChainLink], acceptPolicy: AcceptPolicy = .standard, breadcrumb: PluginBreadcrumb? = nil) {
        self.generation = generation
        self.links = links
        self.acceptPolicy = acceptPolicy
        self.breadcrumb = breadcrumb
        table = .allocate(capacity: links.count)
        for (index, link) in links.enumerated() {
            (table.baseAddress! + index).initialize(to: LinkEntry(
                call: link.validator.call, statistics: link.statistics, health: link.health, kinds: link.origin.readingKinds,
                crumb: PluginBreadcrumb.word(generation: generation, index: index, phase: .validate),
                hangBudget: link.policy.isolation == .inProcess ? link.policy.budgetNanoseconds : 0))
        }
        hangTimer = breadcrumb?.hangTimer ?? -1
        linkNames = LinkNames(links.map(\.name))
        if let breadcrumb {
            slot = breadcrumb.decidingSlot
            ownSlot = nil
        } else {
            let own = UnsafeMutablePointer<cm_crumb_slot>.allocate(capacity: 1)
            own.initialize(to: cm_crumb_slot())
            slot = own
            ownSlot = own
        }
    }

    deinit {
        table.deallocate()
        ownSlot?.deallocate()
    }

    /// The links that are not ok, with why, in chain order.
    public var problems: [(link: ChainLink, problem: LinkHealth.Problem)] {
        links.compactMap { link in link.health.problem.map { (link, $0) } }
    }

    /// Walks the links in order and returns the first decisive verdict.
    public func decide(_ reading: Reading) -> Decision {
        var decision = Decision(linkNames: linkNames, linkIndex: -1, chainGeneration: generation, raw: .blank)
        decide(reading, into: &decision)
        return decision
    }

    /// Decides `reading` into caller-owned storage: the plugins write straight into it, so
    /// nothing is copied or allocated (the deciding loop reuses its slots).
    public func decide(_ reading: Reading, into decision: inout Decision) {
        let walkNumber = walks.load(ordering: .relaxed)
        walks.store(walkNumber &+ 1, ordering: .relaxed)
        let timed = walkNumber % Self.timingSampleInterval == 0

        decision.chainGeneration = generation
        decision.raw.size = UInt32(MemoryLayout<coinmech_decision>.size)
        // Nothing of the previous decision may count: an accept must carry its own figures.
        decision.raw.value_minor = 0
        decision.raw.currency.0 = 0
        decision.raw.code.0 = 0
        let decidedBy: Int = reading.sourceName.withCString { source in
            var cReading = reading.raw
            cReading.source = source
            return timed ? walkLinks(&cReading, &decision.raw, walk: walkNumber, timed: true)
                : walkLinks(&cReading, &decision.raw, walk: walkNumber, timed: false)
        }
        // The decider is named by index; the names change (retain, release) only with the chain.
        if decision.linkNames !== linkNames { decision.linkNames = linkNames }
        decision.linkIndex = decidedBy
        // When every link passed, the verdict stays PASS, which a Decision reads as the
        // terminal link's `unrecognized` rejection: nothing more to write.
        if decidedBy < 0 { terminalStatistics.recordReject() }
    }

    /// Returns the index of the deciding link, or -1 when every link passed. Each link is told
    /// only the kinds of reading it declared; a hung or quarantined link is not called, and
    /// rejects, as does one marked hung during its call. Every call is announced in the slot
    /// (two plain stores); an in-process call also arms the hang timer with its budget first,
    /// and the walk disarms it at the end (no thread is woken unless a call overruns).
    @inline(__always)
    private func walkLinks(_ reading: inout coinmech_reading, _ decision: inout coinmech_decision, walk: UInt64, timed: Bool) -> Int {
        let kind = UInt32(1) << (reading.kind & 31)
        let walkBits = PluginBreadcrumb.walkBits(walk)
        var armed = false
        defer { if armed { cm_hang_timer_disarm(hangTimer) } }
        for index in 0..<table.count {
            let entry = table[index]
            guard entry.kinds & kind != 0 else { continue }
            if entry.health.blocksCalls {
                decision = Self.refusal(links[index])
                entry.statistics.recordReject()
                return index
            }
            decision.verdict = COINMECH_VERDICT_PASS.rawValue
            // Armed before the word is stored: an expiration the hang watch reads while the
            // slot shows this call's word is this call's.
            if entry.hangBudget != 0 && hangTimer >= 0 {
                cm_hang_timer_arm(hangTimer, entry.hangBudget)
                armed = true
            }
            cm_crumb_store(slot, entry.crumb | walkBits)
            if timed {
                let start = Self.monotonicNanoseconds()
                entry.call.function(entry.call.context, &reading, &decision)
                entry.statistics.recordSample(nanoseconds: Self.monotonicNanoseconds() &- start)
            } else {
                entry.call.function(entry.call.context, &reading, &decision)
            }
            cm_crumb_store(slot, 0)
            // Marked hung while this call ran (the hang watch): an accept or a pass came too late
            // to trust. A rejection stands with its own reason: an isolated link whose host died
            // in this very call is quarantined by its supervisor as the call returns, and the
            // coin goes back either way.
            if entry.health.blocksCalls, decision.verdict != COINMECH_VERDICT_REJECT.rawValue {
                decision = Self.refusal(links[index])
                entry.statistics.recordReject()
                return index
            }
            switch decision.verdict {
            case COINMECH_VERDICT_PASS.rawValue:
                entry.statistics.recordPass()
                continue
            case COINMECH_VERDICT_REJECT.rawValue:
                break
            case COINMECH_VERDICT_ACCEPT.rawValue where decision.isWellFormedAccept && acceptPolicy.allows(decision):
                entry.statistics.recordAccept()
                return index
            case COINMECH_VERDICT_ACCEPT.rawValue where decision.isWellFormedAccept && acceptPolicy.isLie(decision):
                // A plausible claim of money the cabinet does not take ("dime" at 100, a
                // currency not configured): the coin goes back, the link is flagged, and after
                // `maximumLies` it is quarantined like a crashing link.
                let problem = acceptPolicy.problem(decision)
                let message = "plugin accepted a coin this cabinet does not take: \(problem)"
                let told = entry.statistics.recordLie(message)
                if told >= Self.maximumLies {
                    entry.health.mark(LinkHealth.Problem(
                        state: .quarantined, cause: "lying",
                        reason: "accepted \(told) coins this cabinet does not take (last: \(problem)); not called until a reload with another plugin or configuration"))
                }
                decision = .rejecting(reason: "plugin_lie", message: message)
            case COINMECH_VERDICT_ACCEPT.rawValue where decision.isWellFormedAccept:
                // A plugin that claims money the host does not believe: the coin goes back.
                let message = "plugin accepted what cannot be credited: \(acceptPolicy.problem(decision))"
                entry.statistics.recordPluginError(message)
                decision = .rejecting(reason: "plugin_error", message: message)
            default:
                Self.markPluginError(&decision)
                entry.statistics.recordPluginError(Decision.string(decision.message))
            }
            entry.statistics.recordReject()
            return index
        }
        return -1
    }

    /// The rejection of a link that is not called (hung or quarantined): fail closed.
    static func refusal(_ link: ChainLink) -> coinmech_decision {
        let problem = link.health.problem
        let reason = problem?.state == .hung ? "plugin_hung" : "quarantined"
        return .rejecting(reason: reason, message: "link '\(link.name)' is \(problem?.state.description ?? "quarantined"): \(problem?.reason ?? "")")
    }

    /// A link that answered nonsense rejects the coin: fail safe, and say whose fault it was.
    private static func markPluginError(_ decision: inout coinmech_decision) {
        let message = decision.verdict == COINMECH_VERDICT_ACCEPT.rawValue
            ? "plugin accepted without currency, code or positive value"
            : "plugin returned unknown verdict \(decision.verdict)"
        decision = .rejecting(reason: "plugin_error", message: message)
    }

    static func monotonicNanoseconds() -> UInt64 { cm_monotonic_ns() }
}

extension Decision {
    static func string<T>(_ field: T) -> String { coinmech_decision.string(field) }
}
