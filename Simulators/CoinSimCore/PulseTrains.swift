import CoinFacts
import CoinMechGPIO

/// What a pulse mech would put on its counting line for a scenario: one pulse train per
/// genuine coin (N pulses for channel N); slugs, washers and foreign coins produce none (the
/// mech rejects them itself). For the decoders' tests and the `gpio-replay` source.
public struct PulseTrains: Sendable {
    public struct Coin: Codable, Sendable {
        public var insertion: Int
        public var kind: String
        /// Channel pulsed, or nil when the mech returned the item itself.
        public var channel: UInt32?
        public var currency: String?
        public var valueMinor: Int64?
    }

    public struct Truth: Codable, Sendable {
        public var coins: [Coin] = []
        /// Value of the coins the mech pulsed, per currency: what the host should credit.
        public var creditedValue: [String: Int64] = [:]
        public var trains = 0
        /// Channel of each denomination, as programmed into the mech.
        public var channels: [String: UInt32] = [:]
    }

    public var edges: [EdgeEvent] = []
    public var truth = Truth()

    /// Channels by denomination code: the currency table's order, from 1 (USD: cent 1 … quarter 4).
    public static func defaultChannels(for currency: String) -> [String: UInt32] {
        Dictionary(uniqueKeysWithValues: (CoinTables.table(for: currency) ?? []).enumerated().map { ($1.code, UInt32($0 + 1)) })
    }

    /// Trains of `width` ms pulses every `period` ms on `line` (active low), at least `spacing`
    /// ms apart; with `bounce`, every edge bounces with 0.4 ms blips.
    public init(scenario: Scenario, line: UInt32 = 4, width: Double = 30, period: Double = 60, spacing: Double = 400, bounce: Bool = false) {
        var generator = InsertionGenerator(scenario: scenario)
        let channels = Self.defaultChannels(for: scenario.currency)
        truth.channels = channels
        var time: UInt64 = 1_000_000_000
        let ms: UInt64 = 1_000_000
        let count = scenario.coins == 0 ? 100 : scenario.coins
        for number in 1...count {
            let insertion = generator.next()
            guard case .coin(let spec) = insertion.kind, let channel = channels[spec.code] else {
                truth.coins.append(Coin(insertion: number, kind: insertion.kind.description))
                continue
            }
            truth.coins.append(Coin(insertion: number, kind: insertion.kind.description, channel: channel, currency: spec.currency, valueMinor: FaceValues.faceValue(of: spec)))
            truth.creditedValue[spec.currency, default: 0] += spec.valueMinor
            truth.trains += 1
            for pulse in 0..<UInt64(channel) {
                let start = time + pulse * UInt64(period * 1e6)
                let end = start + UInt64(width * 1e6)
                edges.append(EdgeEvent(timestampNanoseconds: start, line: line, rising: false))
                if bounce {
                    edges.append(EdgeEvent(timestampNanoseconds: start + 400_000, line: line, rising: true))
                    edges.append(EdgeEvent(timestampNanoseconds: start + 800_000, line: line, rising: false))
                }
                edges.append(EdgeEvent(timestampNanoseconds: end, line: line, rising: true))
            }
            let gap = max(spacing, generator.gap(after: number) * 1000)
            time += UInt64(channel) * UInt64(period * 1e6) + UInt64(gap) * ms
        }
    }
}
