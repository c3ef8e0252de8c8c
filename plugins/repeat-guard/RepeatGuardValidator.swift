import CoinMechPluginABI
import CoinMechPluginKit

/// `repeat-guard`: against a coin on a string. Rejects a reading that repeats an earlier one
/// (every axis within `tolerance`) inside `window_ms`, and readings that follow the previous
/// one faster than a mech can physically deliver coins (`min_interval_ms`).
final class RepeatGuardValidator: SwiftValidator {
    struct Config: PluginConfiguration {
        var window_ms: Double?
        var tolerance: Double?
        var min_interval_ms: Double?
        var history: Int?
        static let keys: Set<String> = ["window_ms", "tolerance", "min_interval_ms", "history"]
    }

    struct Seen {
        var timestamp: UInt64
        var diameter: Double
        var weight: Double
    }

    let windowNanoseconds: UInt64
    let minIntervalNanoseconds: UInt64
    let tolerance: Double
    /// Ring of the latest readings; fixed capacity, so validate never allocates.
    private var ring: [Seen]
    private var next = 0
    private var lastTimestamp: UInt64?
    let repeated: DecisionTemplate
    let tooFast: DecisionTemplate

    init(configJSON: String, host: PluginHost) throws(PluginConfigError) {
        let config = try Config.decode(configJSON)
        let window = config.window_ms ?? 500, interval = config.min_interval_ms ?? 20, tolerance = config.tolerance ?? 0.002
        let history = config.history ?? 8
        try require(window, in: 1...60_000, key: "window_ms")
        try require(interval, in: 0...10_000, key: "min_interval_ms")
        try require(tolerance, in: 0.0001...0.1, key: "tolerance")
        guard (1...1024).contains(history) else { throw PluginConfigError("key 'history' must be between 1 and 1024") }
        windowNanoseconds = UInt64(window * 1e6)
        minIntervalNanoseconds = UInt64(interval * 1e6)
        self.tolerance = tolerance
        ring = Array(repeating: Seen(timestamp: 0, diameter: .nan, weight: .nan), count: history)
        repeated = .reject(reason: "repeat", message: "same coin again within \(Int(window)) ms: coin on a string?")
        tooFast = .reject(reason: "too_fast", message: "readings closer than \(interval) ms: faster than a mech delivers coins")
    }

    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        let now = reading.timestampNanoseconds
        defer { lastTimestamp = now }
        if let last = lastTimestamp, now >= last, now - last < minIntervalNanoseconds {
            return tooFast.write(to: decision)
        }
        guard let d = reading.diameterMM, let w = reading.weightG else { return }
        defer {
            ring[next] = Seen(timestamp: now, diameter: d, weight: w)
            next = (next + 1) % ring.count
        }
        for seen in ring where now >= seen.timestamp && now - seen.timestamp <= windowNanoseconds {
            if abs(d - seen.diameter) <= tolerance * d && abs(w - seen.weight) <= tolerance * w {
                return repeated.write(to: decision)
            }
        }
    }

    func describe() -> String {
        jsonText([
            "window_ms": Double(windowNanoseconds) / 1e6, "min_interval_ms": Double(minIntervalNanoseconds) / 1e6,
            "tolerance": tolerance, "history": Double(ring.count),
        ])
    }
}

@_cdecl("coinmech_plugin_entry")
public func coinmechPluginEntry(_ hostABI: UInt32, _ plugin: UnsafeMutablePointer<coinmech_plugin>?) -> Int32 {
    PluginExport.fill(
        plugin, hostABI: hostABI, name: "repeat-guard", version: "2.0.0", license: "LicenseRef-CoinMech",
        description: "rejects a coin on a string: the same reading again within a window, or readings faster than a mech delivers coins",
        create: { PluginExport.create(RepeatGuardValidator.self, $0, $1, $2, $3) },
        validate: { PluginExport.validate(RepeatGuardValidator.self, $0, $1, $2) })
}
