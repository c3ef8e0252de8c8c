import CoinMechModel
import CoinMechSettings
import CoinMechSources

/// A recorded GPIO edge stream played back as a mech: the GPIO decoders on real timing, without
/// the hardware (tests, CI, a field recording).
public enum GPIOReplayDriver: MechDriver {
    public static let kind = "gpio-replay"
    public static let capabilities: MechCapabilities = [.measures, .classifiesItself]
    public static let keys = ["file", "speed", "pulse", "gates"]
    public static let simulator = "coinsim edges --out FILE (a recorded stream)"

    public struct Settings: MechSettings, Equatable {
        public var file: String
        /// 2 = twice as fast as recorded.
        public var speed: Double
        public var decoding: EdgeDecoding

        public var device: String { file }
        public var capabilities: MechCapabilities {
            if case .pulse = decoding { return [.classifiesItself] }
            return [.measures]
        }
        public var credit: CreditRule { .atOnce }
        public var unteachable: String? {
            if case .pulse = decoding { return "a pulse mech reports channels, not measurements: there is nothing to teach" }
            return "a replayed light-gate stream has no weight: teach mode needs a diameter and a weight"
        }

        public func make(_ context: MechContext) -> any Mech {
            GPIOMech(input: ReplayEdgeInput(path: file, speed: speed), decoder: decoding.decoder, lastDeviceSeq: context.lastDeviceSeq)
        }
    }

    /// file, speed (1), and `pulse` or `gates`.
    public static func parse(_ sourceTable: SettingsTable, resolve: (String) -> String) throws(SettingsError) -> Settings {
        guard let device = try sourceTable.string("file"), !device.isEmpty else { throw sourceTable.error("file", "is required for kind \(kind)") }
        let decoding = try EdgeDecoding.parse(sourceTable, kind: kind)
        var speed = 1.0
        if let configured = try sourceTable.double("speed") {
            guard configured > 0, configured <= 1000 else { throw sourceTable.error("speed", "must be above 0 and at most 1000") }
            speed = configured
        }
        return Settings(file: resolve(device), speed: speed, decoding: decoding)
    }
}
