import CoinFacts
import CoinMechSettings

/// What makes one simulated mech read differently from another, beyond its noise: a systematic
/// bias per axis, a slow drift of that bias, and whether the genuine coins themselves vary
/// within their mint tolerance. All zero (off) by default, so scenarios without a `mech` block
/// play exactly as before. Documented in docs/SIMULATOR.md (`mech.*`).
public struct MechErrors: Sendable, Hashable {
    /// One axis's bias: a relative part (gain error) and an absolute part (offset, mm or g).
    public struct Bias: Sendable, Hashable {
        public var relative: Double
        public var absolute: Double

        public init(relative: Double = 0, absolute: Double = 0) {
            self.relative = relative
            self.absolute = absolute
        }
    }

    public var diameterBias = Bias()
    public var weightBias = Bias()
    public var thicknessBias = Bias()
    /// Relative change of each axis's reading per 1,000 insertions (the sensors age or warm up).
    public var diameterDrift = 0.0
    public var weightDrift = 0.0
    public var thicknessDrift = 0.0
    /// Genuine coins vary around their nominal figures by their mint tolerance, read as ±3σ.
    public var mintSpread = false

    public init() {}

    /// A coin whose true figure on one axis is `value`, as this mech reads it at insertion `number`
    /// (noise not included).
    func read(_ value: Double, _ bias: Bias, drift: Double, number: Int) -> Double {
        value * (1 + bias.relative + drift * Double(number) / 1000) + bias.absolute
    }

    public func readDiameter(_ value: Double, number: Int) -> Double { read(value, diameterBias, drift: diameterDrift, number: number) }
    public func readWeight(_ value: Double, number: Int) -> Double { read(value, weightBias, drift: weightDrift, number: number) }
    public func readThickness(_ value: Double, number: Int) -> Double { read(value, thicknessBias, drift: thicknessDrift, number: number) }

    /// Parses the scenario's `mech` table; errors name the file, the line and the key.
    public static func parse(_ table: SettingsTable) throws(SettingsError) -> MechErrors {
        try table.rejectUnknownKeys(["bias", "drift", "mint_spread"])
        var errors = MechErrors()
        if let bias = try table.table("bias") {
            try bias.rejectUnknownKeys(["diameter", "weight", "thickness"])
            errors.diameterBias = try parseBias(bias, "diameter")
            errors.weightBias = try parseBias(bias, "weight")
            errors.thicknessBias = try parseBias(bias, "thickness")
        }
        if let drift = try table.table("drift") {
            try drift.rejectUnknownKeys(["diameter", "weight", "thickness"])
            errors.diameterDrift = try parseDrift(drift, "diameter")
            errors.weightDrift = try parseDrift(drift, "weight")
            errors.thicknessDrift = try parseDrift(drift, "thickness")
        }
        errors.mintSpread = try table.bool("mint_spread") ?? false
        return errors
    }

    /// A number is relative (0.01 = reads 1 % high); `{offset: 0.05, absolute: true}` is in mm or g.
    static func parseBias(_ table: SettingsTable, _ key: String) throws(SettingsError) -> Bias {
        if table.contains(key), let detailed = try? table.table(key) {
            try detailed.rejectUnknownKeys(["offset", "absolute"])
            guard let offset = try detailed.double("offset") else { throw detailed.error("offset", "is required") }
            guard abs(offset) <= 5 else { throw detailed.error("offset", "must be between -5 and 5 (mm or g)") }
            return try detailed.bool("absolute") ?? false ? Bias(absolute: offset) : Bias(relative: try relative(detailed, "offset", offset))
        }
        guard let value = try table.double(key) else { return Bias() }
        return Bias(relative: try relative(table, key, value))
    }

    static func relative(_ table: SettingsTable, _ key: String, _ value: Double) throws(SettingsError) -> Double {
        guard abs(value) <= 0.2 else { throw table.error(key, "a relative bias must be between -0.2 and 0.2") }
        return value
    }

    static func parseDrift(_ table: SettingsTable, _ key: String) throws(SettingsError) -> Double {
        guard let value = try table.double(key) else { return 0 }
        guard abs(value) <= 0.1 else { throw table.error(key, "drift per 1,000 insertions must be between -0.1 and 0.1") }
        return value
    }
}
