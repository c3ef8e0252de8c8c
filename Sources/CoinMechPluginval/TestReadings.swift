import CoinFacts
import CoinMechChain
import CoinMechPluginABI
import CoinSimCore

/// The readings a plugin is put through: edge cases (every field at its limits, NaN, zero,
/// negative, huge, no measurement at all) and seeded random ones, half near real coins, half
/// nonsense. A failing random reading is reproduced with the same seed.
enum TestReadings {
    /// A name for each edge reading, for findings.
    static func edge(kinds: UInt32) -> [(name: String, reading: Reading)] {
        let specials: [(String, Double)] = [
            ("zero", 0), ("negative zero", -0.0), ("negative", -24.26), ("tiny", 1e-300), ("denormal", Double.leastNonzeroMagnitude),
            ("huge", 1e308), ("max", .greatestFiniteMagnitude), ("+infinity", .infinity), ("-infinity", -.infinity), ("NaN", .nan),
            ("signalling NaN", .signalingNaN),
        ]
        var readings: [(String, Reading)] = [("no measurement at all", Reading(deviceSeq: 1))]
        var seq: UInt64 = 1
        func next() -> UInt64 { seq += 1; return seq }
        for (name, value) in specials {
            readings.append(("diameter \(name)", Reading(deviceSeq: next(), diameterMM: value, weightG: 5.67)))
            readings.append(("weight \(name)", Reading(deviceSeq: next(), diameterMM: 24.26, weightG: value)))
            readings.append(("thickness \(name)", Reading(deviceSeq: next(), diameterMM: 24.26, weightG: 5.67, thicknessMM: value)))
            readings.append(("every figure \(name)", Reading(deviceSeq: next(), diameterMM: value, weightG: value, thicknessMM: value)))
        }
        readings += [
            ("diameter alone", Reading(deviceSeq: next(), diameterMM: 24.26)),
            ("weight alone", Reading(deviceSeq: next(), weightG: 5.67)),
            ("channel 0", Reading(deviceSeq: next(), channel: 0)),
            ("channel 1", Reading(deviceSeq: next(), channel: 1)),
            ("channel max", Reading(deviceSeq: next(), channel: .max)),
            ("device seq max, timestamp max", Reading(deviceSeq: .max, timestampNanoseconds: .max, diameterMM: 24.26, weightG: 5.67)),
            ("timestamp 0", Reading(deviceSeq: next(), timestampNanoseconds: 0, diameterMM: 24.26, weightG: 5.67)),
            ("empty source name", Reading(deviceSeq: next(), diameterMM: 24.26, weightG: 5.67, source: "")),
            ("longest source name", Reading(deviceSeq: next(), diameterMM: 24.26, weightG: 5.67, source: String(repeating: "s", count: SourceName.capacity))),
        ]
        for coin in CoinTables.usd + CoinTables.eur + CoinTables.gbp {
            readings.append(("a nominal \(coin.currency) \(coin.code)", Reading(deviceSeq: next(), diameterMM: coin.diameterMM, weightG: coin.weightG, thicknessMM: coin.thicknessMM)))
        }
        if kinds & COINMECH_KINDS_ALLOY != 0 {
            // The alloy axis at its limits, on a coin's size and weight.
            let figures: [(String, Reading.Alloy)] = [
                ("no metal", Reading.Alloy(lowIACS: 0, highIACS: 0, permeability: 1)),
                ("copper", Reading.Alloy(lowIACS: 100, highIACS: 100, permeability: 1)),
                ("steel", Reading.Alloy(lowIACS: 0.4, highIACS: 0.1, permeability: 200)),
                ("no permeability", Reading.Alloy(lowIACS: 70, highIACS: 6.5)),
            ] + specials.map { ("low \($0.0)", Reading.Alloy(lowIACS: $0.1, highIACS: 6.5, permeability: 1)) }
              + specials.map { ("high \($0.0)", Reading.Alloy(lowIACS: 70, highIACS: $0.1, permeability: 1)) }
              + specials.map { ("permeability \($0.0)", Reading.Alloy(lowIACS: 70, highIACS: 6.5, permeability: $0.1)) }
            for (name, alloy) in figures {
                readings.append(("alloy \(name)", Reading(deviceSeq: next(), diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75, alloy: alloy)))
            }
        }
        if kinds & COINMECH_KINDS_COIN_ID != 0 {
            readings += [
                ("coin id EU200A at position 1", Reading(deviceSeq: next(), coinPosition: 1, coinID: "EU200A", sorterPath: 1)),
                ("coin id empty position", Reading(deviceSeq: next(), coinPosition: 16, coinID: "......")),
                ("coin id position 0, no id", Reading(deviceSeq: next(), coinPosition: 0, coinID: "")),
                ("coin id longest", Reading(deviceSeq: next(), coinPosition: .max, coinID: String(repeating: "Z", count: 15), sorterPath: .max)),
            ]
        }
        return readings.filter { kinds & (1 << $0.1.kind.rawValue) != 0 }
    }

    /// `count` random readings from `seed`, with timestamps 10 to 500 ms apart (as coins come).
    static func random(count: Int, seed: UInt64, kinds: UInt32) -> [Reading] {
        var random = SplitMix64(seed: seed)
        let coins = CoinTables.usd + CoinTables.eur + CoinTables.gbp
        var time: UInt64 = 1_000_000_000
        var readings: [Reading] = []
        readings.reserveCapacity(count)
        for seq in 1...max(1, count) {
            time += random.next(upTo: 490_000_000) + 10_000_000
            if kinds & COINMECH_KINDS_MEASURED == 0 || (kinds & COINMECH_KINDS_COIN_ID != 0 && random.next(upTo: 4) == 0) {
                let id = ["EU200A", "EU100A", "GB050B", "US025A", "......", ""][Int(random.next(upTo: 6))]
                readings.append(Reading(deviceSeq: UInt64(seq), timestampNanoseconds: time, coinPosition: UInt32(random.next(upTo: 17)),
                                        coinID: id, sorterPath: UInt32(random.next(upTo: 9))))
                continue
            }
            var reading: Reading
            if random.next(upTo: 2) == 0 {
                // Near a real coin: the mech's noise, now and then far off.
                let coin = coins[Int(random.next(upTo: UInt64(coins.count)))]
                let spread = random.next(upTo: 10) == 0 ? 0.2 : 0.01
                reading = Reading(deviceSeq: UInt64(seq), timestampNanoseconds: time,
                                  diameterMM: coin.diameterMM * (1 + random.unit(spread)), weightG: coin.weightG * (1 + random.unit(spread)),
                                  thicknessMM: random.next(upTo: 2) == 0 ? coin.thicknessMM.map { $0 * (1 + random.unit(spread)) } : nil)
            } else {
                // Nonsense: any field, any value, any combination.
                reading = Reading(deviceSeq: UInt64(seq), timestampNanoseconds: time)
                if random.next(upTo: 4) != 0 { reading.diameterMM = random.anyDouble() }
                if random.next(upTo: 4) != 0 { reading.weightG = random.anyDouble() }
                if random.next(upTo: 2) == 0 { reading.thicknessMM = random.anyDouble() }
                if random.next(upTo: 4) == 0 { reading.channel = UInt32(truncatingIfNeeded: random.next()) }
            }
            if kinds & COINMECH_KINDS_ALLOY != 0, random.next(upTo: 2) == 0 {
                // Half of a plugin's readings carry the alloy axis it declares it judges: plausible
                // conductivities, now and then anything at all.
                reading.alloy = random.next(upTo: 4) == 0
                    ? Reading.Alloy(lowIACS: random.anyDouble(), highIACS: random.anyDouble(), permeability: random.next(upTo: 2) == 0 ? random.anyDouble() : nil)
                    : Reading.Alloy(lowIACS: abs(random.unit(110)), highIACS: abs(random.unit(110)), permeability: 1 + abs(random.unit(1)) * (random.next(upTo: 3) == 0 ? 200 : 0.05))
            }
            readings.append(reading)
        }
        return readings
    }
}

/// The simulator's seedable generator, with what the random readings need.
extension SplitMix64 {
    mutating func next(upTo bound: UInt64) -> UInt64 { next() % max(1, bound) }

    /// Uniform in [-spread, spread].
    mutating func unit(_ spread: Double) -> Double { (Double(next() >> 11) / Double(1 << 53) * 2 - 1) * spread }

    /// Any double: plausible, special, or raw bits.
    mutating func anyDouble() -> Double {
        switch next(upTo: 6) {
        case 0: return [0, -0.0, .nan, .infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude][Int(next(upTo: 8))]
        case 1: return Double(bitPattern: next())
        case 2: return unit(1e6)
        default: return abs(unit(60))
        }
    }
}
