/// A coin measured by two light gates a known distance apart along its path.
public struct GateCoin: Sendable, Hashable {
    public var diameterMM: Double
    /// Speed through the gates, mm/s.
    public var speedMMPerSecond: Double
    public var enteredNanoseconds: UInt64
    /// Kernel time the coin reached gate B: when it was measured, and its deadline's start.
    public var measuredNanoseconds: UInt64
}

/// Turns two light gates' edges into diameters. Pure: edges in, coins out.
///
/// Speed is the gate distance over the time between the coin's leading edge reaching gate A
/// and gate B; the diameter is how long gate A stayed occluded times that speed.
public struct LightGateDecoder: Sendable {
    public struct Settings: Sendable, Hashable {
        public var gateA: UInt32
        public var gateB: UInt32
        /// Distance between the gates along the coin's path.
        public var distanceMM: Double
        /// True when an occluded gate reads low.
        public var activeLow: Bool
        /// Occlusions shorter than this are dust or flicker.
        public var minimumOcclusionNanoseconds: UInt64

        public init(gateA: UInt32, gateB: UInt32, distanceMM: Double, activeLow: Bool = true, minimumOcclusionMilliseconds: Double = 0.5) {
            self.gateA = gateA
            self.gateB = gateB
            self.distanceMM = distanceMM
            self.activeLow = activeLow
            minimumOcclusionNanoseconds = UInt64(minimumOcclusionMilliseconds * 1e6)
        }
    }

    public let settings: Settings
    private var aStart: UInt64?
    private var aOcclusion: (start: UInt64, end: UInt64)?
    private var bStart: UInt64?
    public private(set) var glitches = 0

    public init(settings: Settings) { self.settings = settings }

    /// Feeds one edge; returns a coin when both gates have seen it.
    public mutating func feed(_ edge: EdgeEvent) -> GateCoin? {
        let occluded = edge.rising != settings.activeLow
        if edge.line == settings.gateA {
            if occluded {
                aStart = edge.timestampNanoseconds
            } else if let start = aStart {
                aStart = nil
                if edge.timestampNanoseconds - start >= settings.minimumOcclusionNanoseconds {
                    aOcclusion = (start, edge.timestampNanoseconds)
                } else {
                    glitches += 1
                }
            }
        } else if edge.line == settings.gateB, occluded {
            bStart = edge.timestampNanoseconds
            guard let a = aOcclusion, let b = bStart, b > a.start else { return nil }
            aOcclusion = nil
            let transit = Double(b - a.start) / 1e9
            let speed = settings.distanceMM / transit
            return GateCoin(diameterMM: speed * Double(a.end - a.start) / 1e9, speedMMPerSecond: speed, enteredNanoseconds: a.start,
                            measuredNanoseconds: b)
        }
        return nil
    }
}
