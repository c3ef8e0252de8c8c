import CoinMechCalibration
import CoinMechPluginKit

/// The link's configuration, as docs/PLUGINS.md (coin-table) documents it.
struct CoinTableConfig: PluginConfiguration {
    /// Per-axis figures given in configuration; any may be left out.
    struct Axes: Decodable {
        var diameter: Double?
        var weight: Double?
        var thickness: Double?
        /// The alloy sensor's noise (each conductivity and the permeability), relative; only in `sensor_noise`.
        var alloy: Double?
    }

    /// How the mech's alloy axis is judged (docs/PLUGINS.md, coin-table).
    struct Alloy: Decodable {
        /// The mech's two frequencies (Hz), low then high: the nominal windows are computed for
        /// them (default: the protocol's reference pair, 60 kHz and 1 MHz).
        var frequencies_hz: [Double]?
        /// The cabinet's temperatures, °C, lowest and highest: copper's conductivity moves 0.4 %
        /// a kelvin, and the windows allow for it (default 10 to 30).
        var temperature_c: [Double]?
        /// How far (in σ) a reading's alloy may lie from a composition's centre (default 5).
        var window: Double?
        /// False: readings' alloy axis is ignored and they are judged as if the mech had none.
        var enabled: Bool?
    }

    /// "USD", "EUR" or "GBP".
    var currency: String
    /// Only these codes (default: the whole table).
    var denominations: [String]?
    /// False for mechs that measure no weight (light gates alone): readings without a weight
    /// are then judged on diameter (and thickness, if measured). Default true.
    var require_weight: Bool?
    /// The mech's sensor noise per axis, relative σ (default `SensorNoise.typical`).
    var sensor_noise: Axes?
    /// How far (in σ) a reading may lie from a denomination and still be accepted as it.
    var window: Double?
    /// How much farther (in σ) the runner-up must be than the nearest for an accept.
    var margin: Double?
    /// How many times likelier a reading must be of the accepted denomination than of any
    /// foreign coin (default 300); a foreign coin nearest must be as much likelier to pass.
    var foreign_odds: Double?
    /// Currencies whose coins this link knows in order never to credit them (default: every
    /// other built-in table).
    var foreign: [String]?
    /// Teach mode's calibration of this mech: a file path, or the file's object inline.
    var calibration: CalibrationSource?
    /// Whether the windows follow the mech's drift, learnt from the coins it credits (default true).
    var follow_drift: Bool?
    /// The largest drift followed per axis, relative (default 0.05, i.e. ±5 %).
    var max_drift: Double?
    /// Optional hard limit, relative to the window's centre, on every axis of every denomination
    /// (the window of configurations written before the noise model).
    var tolerance: Double?
    /// The same per denomination and axis, e.g. {"EUR_50c": {"diameter": 0.02}}.
    var tolerances: [String: Axes]?
    /// The alloy axis (when readings carry one).
    var alloy: Alloy?

    static let keys: Set<String> = [
        "currency", "denominations", "require_weight", "sensor_noise", "window", "margin", "foreign", "calibration",
        "tolerance", "tolerances", "follow_drift", "max_drift", "foreign_odds", "alloy",
    ]

    static let defaultWindow = 4.0
    static let defaultMargin = 1.5
    static let defaultMaxDrift = 0.05
    static let defaultForeignOdds = 300.0
    static let defaultAlloyWindow = 5.0
    /// A decent eddy-current sensor: 2 % on each conductivity and on the permeability.
    static let defaultAlloyNoise = 0.02
    static let defaultTemperatures = [10.0, 30.0]
}

/// The `calibration` key: a file teach mode wrote, or the same object inline.
enum CalibrationSource: Decodable {
    case file(String)
    case inline(CoinCalibration)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let path = try? container.decode(String.self) {
            self = .file(path)
        } else {
            self = .inline(try container.decode(CoinCalibration.self))
        }
    }
}
