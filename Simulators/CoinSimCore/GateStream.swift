import CoinMechGPIO

/// What a light-gate mech's two gates see for a scenario: every item passes both gates (the
/// host decides), occluding each for diameter ÷ speed, the second gate `distance` mm after the
/// first. Speeds vary from 1.5 to 2.5 m/s, as coins rolling down a chute do.
public struct GateStream: Sendable {
    public struct Item: Codable, Sendable {
        public var insertion: Int
        public var kind: String
        /// The diameter the gates measure (the scenario's noisy measurement).
        public var diameterMM: Double
        public var speedMMPerSecond: Double

        enum CodingKeys: String, CodingKey {
            case insertion, kind, diameterMM = "diameter_mm", speedMMPerSecond = "speed_mm_per_s"
        }
    }

    public var edges: [EdgeEvent] = []
    public var items: [Item] = []

    public init(scenario: Scenario, gateA: UInt32 = 10, gateB: UInt32 = 11, distanceMM: Double = 50, spacingMilliseconds: Double = 300) {
        var generator = InsertionGenerator(scenario: scenario)
        var rng = SplitMix64(seed: scenario.seed ^ 0x6A7E)
        var time: UInt64 = 1_000_000_000
        let count = scenario.coins == 0 ? 100 : scenario.coins
        for number in 1...count {
            let insertion = generator.next()
            let speed = Double.random(in: 1500...2500, using: &rng)
            let occlusion = UInt64(insertion.diameterMM / speed * 1e9)
            let transit = UInt64(distanceMM / speed * 1e9)
            // Active low: an occluded gate reads low.
            edges += [
                EdgeEvent(timestampNanoseconds: time, line: gateA, rising: false),
                EdgeEvent(timestampNanoseconds: time + occlusion, line: gateA, rising: true),
                EdgeEvent(timestampNanoseconds: time + transit, line: gateB, rising: false),
                EdgeEvent(timestampNanoseconds: time + transit + occlusion, line: gateB, rising: true),
            ]
            items.append(Item(insertion: number, kind: insertion.kind.description, diameterMM: insertion.diameterMM, speedMMPerSecond: speed))
            time += transit + occlusion + UInt64(max(spacingMilliseconds, generator.gap(after: number) * 1000) * 1e6)
        }
        edges.sort { $0.timestampNanoseconds < $1.timestampNanoseconds }
    }
}
