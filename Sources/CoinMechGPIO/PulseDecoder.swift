/// A coin from a pulse mech (CH-926 and the like): N pulses on one line mean channel N.
public struct PulseCoin: Sendable, Hashable {
    /// The channel: the number of pulses counted.
    public var channel: UInt32
    /// Kernel time of the first and the last pulse's leading edge.
    public var firstPulseNanoseconds: UInt64
    public var lastPulseNanoseconds: UInt64
    /// Kernel time the train ended (the last pulse's start plus the gap): when the coin could
    /// first be known, and its deadline's start.
    public var completedNanoseconds: UInt64
    /// Pulses came closer together than the train's own period suggests, or more of them
    /// than the highest channel: probably two coins' trains merged. Such a coin is not credited.
    public var suspectMerged: Bool
}

/// Turns edges on a pulse mech's counting line into coins. Pure: edges in, coins out.
///
/// A pulse is an active-going edge followed by an inactive-going edge at least
/// `minimumPulse` later; shorter ones are bounce or static and are ignored. A coin ends when
/// no pulse starts for `gap` (typically about three pulse periods).
public struct PulseDecoder: Sendable {
    public struct Settings: Sendable, Hashable {
        /// The line's offset.
        public var line: UInt32
        /// True when a pulse pulls the line low (open-collector outputs usually do).
        public var activeLow: Bool
        public var minimumPulseNanoseconds: UInt64
        public var gapNanoseconds: UInt64
        /// The highest channel the mech is programmed for; more pulses mean merged trains.
        public var highestChannel: UInt32

        public init(line: UInt32, activeLow: Bool = true, minimumPulseMilliseconds: Double = 10, gapMilliseconds: Double = 150,
                    highestChannel: UInt32 = 16) {
            self.line = line
            self.activeLow = activeLow
            minimumPulseNanoseconds = UInt64(minimumPulseMilliseconds * 1e6)
            gapNanoseconds = UInt64(gapMilliseconds * 1e6)
            self.highestChannel = highestChannel
        }
    }

    public let settings: Settings
    private var pulseStart: UInt64?
    private var pulses: [UInt64] = []
    /// Pulses shorter than the minimum, since the start.
    public private(set) var glitches = 0

    public init(settings: Settings) { self.settings = settings }

    /// When the coin in progress ends if no further pulse comes (for the caller's poll timeout).
    public var deadline: UInt64? { pulses.last.map { $0 + settings.gapNanoseconds } }

    /// Feeds one edge; returns the coin it completed, if a gap passed before it.
    public mutating func feed(_ edge: EdgeEvent) -> PulseCoin? {
        guard edge.line == settings.line else { return nil }
        var finished: PulseCoin?
        // The gap is measured to the next pulse's start; a pulse already under way keeps the coin open.
        if pulseStart == nil, let end = deadline, edge.timestampNanoseconds >= end { finished = finish() }
        let active = edge.rising != settings.activeLow
        if active {
            pulseStart = edge.timestampNanoseconds
        } else if let start = pulseStart {
            pulseStart = nil
            if edge.timestampNanoseconds - start >= settings.minimumPulseNanoseconds {
                pulses.append(start)
            } else {
                glitches += 1
            }
        }
        return finished
    }

    /// The coin in progress, if its gap has passed at `now`.
    public mutating func poll(now: UInt64) -> PulseCoin? {
        guard let end = deadline, now >= end, pulseStart == nil else { return nil }
        return finish()
    }

    private mutating func finish() -> PulseCoin? {
        guard let first = pulses.first, let last = pulses.last else { return nil }
        defer { pulses.removeAll(keepingCapacity: true) }
        var merged = pulses.count > Int(settings.highestChannel)
        if pulses.count >= 3 {
            // A mech's pulse period is steady; a gap well above it inside one train is two coins.
            let periods = zip(pulses.dropFirst(), pulses).map { $0 - $1 }.sorted()
            let median = periods[periods.count / 2]
            merged = merged || periods.last! > median * 2
        }
        return PulseCoin(channel: UInt32(pulses.count), firstPulseNanoseconds: first, lastPulseNanoseconds: last,
                         completedNanoseconds: last + settings.gapNanoseconds, suspectMerged: merged)
    }
}
