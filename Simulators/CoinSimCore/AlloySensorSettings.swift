import CoinMechEddyCurrent
import CoinMechSettings
import Foundation

/// The simulated mech's eddy-current sensor (the scenario's `alloy` block; docs/SIMULATOR.md).
/// Absent: the mech measures no alloy axis, and its readings carry none, as before.
public struct AlloySensorSettings: Sendable, Hashable {
    /// The coil's two frequencies (the protocol's reference pair unless the scenario says).
    public var sensor = EddyCurrentSensor.reference
    /// Relative σ of each conductivity and of the permeability, per reading.
    public var noise = 0.01
    /// Whether it has a magnetic pick-up (sends the permeability).
    public var measuresPermeability = true
    /// The cabinet's temperature, °C, and how far it swings (±) over `temperaturePeriod` insertions.
    public var temperatureCelsius = 20.0
    public var temperatureSwing = 0.0
    public var temperaturePeriod = 1000
    /// The coil's gain errors at each frequency, relative (0.02: reads 2 % high).
    public var lowBias = 0.0
    public var highBias = 0.0

    public init() {}

    /// The cabinet's temperature when insertion `number` goes in.
    public func celsius(at number: Int) -> Double {
        guard temperatureSwing != 0 else { return temperatureCelsius }
        return temperatureCelsius + temperatureSwing * sin(2 * Double.pi * Double(number) / Double(max(1, temperaturePeriod)))
    }

    /// Reads the scenario's `alloy` table; errors name the file, the line and the key.
    public static func parse(_ table: SettingsTable) throws(SettingsError) -> AlloySensorSettings {
        try table.rejectUnknownKeys(["frequencies_hz", "noise", "permeability", "temperature_c", "temperature_swing_c", "temperature_period", "bias"])
        var settings = AlloySensorSettings()
        if let frequencies = try table.doubles("frequencies_hz") {
            guard frequencies.count == 2, frequencies[0] >= 1_000, frequencies[1] <= 20_000_000, frequencies[0] < frequencies[1] else {
                throw table.error("frequencies_hz", "must be two frequencies in Hz, low then high, between 1 kHz and 20 MHz")
            }
            settings.sensor = EddyCurrentSensor(lowHz: frequencies[0], highHz: frequencies[1])
        }
        if let noise = try table.double("noise") {
            guard (0...0.2).contains(noise) else { throw table.error("noise", "relative σ must be between 0 and 0.2") }
            settings.noise = noise
        }
        settings.measuresPermeability = try table.bool("permeability") ?? true
        if let celsius = try table.double("temperature_c") {
            guard (-40...85).contains(celsius) else { throw table.error("temperature_c", "must be between -40 and 85 °C") }
            settings.temperatureCelsius = celsius
        }
        if let swing = try table.double("temperature_swing_c") {
            guard (0...40).contains(swing) else { throw table.error("temperature_swing_c", "must be between 0 and 40 K") }
            settings.temperatureSwing = swing
        }
        if let period = try table.int("temperature_period") {
            guard period >= 1 else { throw table.error("temperature_period", "must be 1 insertion or more") }
            settings.temperaturePeriod = period
        }
        if let bias = try table.table("bias") {
            try bias.rejectUnknownKeys(["low", "high"])
            for (key, path) in [("low", \AlloySensorSettings.lowBias), ("high", \AlloySensorSettings.highBias)] {
                guard let value = try bias.double(key) else { continue }
                guard abs(value) <= 0.2 else { throw bias.error(key, "a relative bias must be between -0.2 and 0.2") }
                settings[keyPath: path] = value
            }
        }
        return settings
    }
}
