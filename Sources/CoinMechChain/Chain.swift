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
/// last reading walking it is done.
public final class Chain: Sendable {
    /// Name and reason of the terminal link.
    public static let terminalLinkName = "unrecognized"
    /// One walk in this many times its links.
    public static let timingSampleInterval: UInt64 = 16

    /// Counts chains built by this process: each gets the next number unless told otherwise.
    public let generation: UInt64
    public let links: [ChainLink]
    /// Counters of the terminal link (its rejects are the `unrecognized` coins).
    public let terminalStatistics = LinkStatistics()
    private let walks = Atomic<UInt64>(0)

    public init(generation: UInt64, links: [ChainLink]) {
        self.generation = generation
        self.links = links
    }

    /// Walks the links in order and returns the first decisive verdict.
    public func decide(_ reading: Reading) -> Decision {
        let walkNumber = walks.load(ordering: .relaxed)
        walks.store(walkNumber &+ 1, ordering: .relaxed)
        let timed = walkNumber % Self.timingSampleInterval == 0

        var raw = coinmech_decision.blank
        let decidedBy: Int? = reading.source.withCString { source in
            var cReading = reading.cReading(source: source)
            return walkLinks(&cReading, &raw, timed: timed)
        }
        guard let index = decidedBy else {
            terminalStatistics.recordReject()
            raw.verdict = COINMECH_VERDICT_REJECT.rawValue
            Decision.write(Self.terminalLinkName, into: &raw.reason)
            Decision.write("no link recognised the coin", into: &raw.message)
            return Decision(reading: reading, linkName: Self.terminalLinkName, chainGeneration: generation, raw: raw)
        }
        return Decision(reading: reading, linkName: links[index].name, chainGeneration: generation, raw: raw)
    }

    /// Returns the index of the deciding link, or nil when every link passed.
    @inline(__always)
    private func walkLinks(_ reading: inout coinmech_reading, _ decision: inout coinmech_decision, timed: Bool) -> Int? {
        for index in links.indices {
            let link = links[index]
            decision.verdict = COINMECH_VERDICT_PASS.rawValue
            if timed {
                let start = Self.monotonicNanoseconds()
                link.validator.validate(&reading, &decision)
                link.statistics.recordSample(nanoseconds: Self.monotonicNanoseconds() &- start)
            } else {
                link.validator.validate(&reading, &decision)
            }
            switch decision.verdict {
            case COINMECH_VERDICT_PASS.rawValue:
                link.statistics.recordPass()
            case COINMECH_VERDICT_ACCEPT.rawValue:
                if decision.isWellFormedAccept {
                    link.statistics.recordAccept()
                } else {
                    Self.markPluginError(&decision)
                    link.statistics.recordReject()
                }
                return index
            case COINMECH_VERDICT_REJECT.rawValue:
                link.statistics.recordReject()
                return index
            default:
                Self.markPluginError(&decision)
                link.statistics.recordReject()
                return index
            }
        }
        return nil
    }

    /// A link that answered nonsense rejects the coin: fail safe, and say whose fault it was.
    private static func markPluginError(_ decision: inout coinmech_decision) {
        let message: String
        if case .decided(.reject(let rejection)) = decision.linkVerdict() {
            message = rejection.message
        } else {
            message = "plugin answered an invalid verdict"
        }
        decision = .blank
        decision.verdict = COINMECH_VERDICT_REJECT.rawValue
        Decision.write("plugin_error", into: &decision.reason)
        Decision.write(message, into: &decision.message)
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}

extension Reading {
    /// The C view of this reading, valid while `source` is.
    @inline(__always)
    func cReading(source: UnsafePointer<CChar>) -> coinmech_reading {
        var flags: UInt32 = 0
        if diameterMM != nil { flags |= UInt32(COINMECH_READING_HAS_DIAMETER) }
        if weightG != nil { flags |= UInt32(COINMECH_READING_HAS_WEIGHT) }
        if thicknessMM != nil { flags |= UInt32(COINMECH_READING_HAS_THICKNESS) }
        if channel != nil { flags |= UInt32(COINMECH_READING_HAS_CHANNEL) }
        return coinmech_reading(
            size: UInt32(MemoryLayout<coinmech_reading>.size), flags: flags, device_seq: deviceSeq,
            timestamp_ns: timestampNanoseconds, diameter_mm: diameterMM ?? 0, weight_g: weightG ?? 0,
            thickness_mm: thicknessMM ?? 0, channel: channel ?? 0, reserved: 0, source: source)
    }
}
