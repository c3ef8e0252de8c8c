import Foundation

/// What teach mode learnt on one mech: for each taught denomination, where its readings fall
/// (mean and σ per axis) and from how many sample coins. `coin-table` uses it in place of the
/// nominal windows (its `calibration` key: a path to this file, or the object inline).
///
/// The file is JSON:
///
///     {"format": 1, "currency": "EUR", "mech": "front",
///      "denominations": {"EUR_50c": {"samples": 40,
///          "diameter": {"mean": 24.31, "sigma": 0.071}, "weight": {"mean": 7.93, "sigma": 0.16},
///          "thickness": {"mean": 2.45, "sigma": 0.05},
///          "alloy": [{"samples": 40, "conductivity_low": {"mean": 13.1, "sigma": 0.21},
///                     "conductivity_high": {"mean": 13.0, "sigma": 0.2}, "log_permeability": {"mean": 0.0, "sigma": 0.01}}]}}}
public struct CoinCalibration: Sendable, Hashable, Codable {
    /// The format this code reads and writes.
    public static let currentFormat = 1
    /// Fewer sample coins than this cannot give a σ worth trusting.
    public static let minimumSamples = 10

    public var format: Int
    /// ISO 4217 code of the taught coins.
    public var currency: String
    /// Which mech (source) was taught; informational.
    public var mech: String?
    /// By denomination code.
    public var denominations: [String: TaughtCoin]

    public init(currency: String, mech: String? = nil, denominations: [String: TaughtCoin]) {
        format = Self.currentFormat
        self.currency = currency
        self.mech = mech
        self.denominations = denominations
    }

    /// One denomination as the mech measured its sample coins.
    public struct TaughtCoin: Sendable, Hashable, Codable {
        public var samples: Int
        public var diameter: CoinSpread.Axis
        public var weight: CoinSpread.Axis
        /// Nil when the mech measures no thickness.
        public var thickness: CoinSpread.Axis?
        /// The alloy axis, one window per composition the sample coins showed; nil when the mech
        /// measures none (and in files written before it).
        public var alloy: [TaughtAlloy]?

        public init(samples: Int, diameter: CoinSpread.Axis, weight: CoinSpread.Axis, thickness: CoinSpread.Axis?, alloy: [TaughtAlloy]? = nil) {
            self.samples = samples
            self.diameter = diameter
            self.weight = weight
            self.thickness = thickness
            self.alloy = alloy
        }

        public var spread: CoinSpread { CoinSpread(diameter: diameter, weight: weight, thickness: thickness) }

        /// The window `coin-table` matches with: the measured means, and each σ widened by its
        /// own standard error (σ / √(2(n − 1)) for n sample coins), since a σ measured on 40
        /// coins is 11 % too small as often as not, and a window that narrow returns genuine coins.
        public var matchingSpread: CoinSpread {
            let widen = 1 + 1 / (2 * Double(max(samples, 2) - 1)).squareRoot()
            func axis(_ a: CoinSpread.Axis) -> CoinSpread.Axis { CoinSpread.Axis(mean: a.mean, sigma: a.sigma * widen) }
            return CoinSpread(diameter: axis(diameter), weight: axis(weight), thickness: thickness.map(axis))
        }

        /// Mean and sample standard deviation (n − 1) per axis of the readings of sample coins.
        /// Thickness is taught only when every sample has it. A σ is never below 0.05 % of its
        /// mean, so a sensor that rounds to the same figure every time still gives a window.
        public static func fit(_ samples: [(diameter: Double, weight: Double, thickness: Double?)]) throws(CalibrationError) -> TaughtCoin {
            guard samples.count >= CoinCalibration.minimumSamples, let coin = measure(samples) else {
                throw CalibrationError("teaching needs at least \(CoinCalibration.minimumSamples) sample coins, got \(samples.count)")
            }
            return coin
        }

        /// The same figures from any number of samples (nil for fewer than two): what teach
        /// mode shows while coins are still coming. Only `fit` makes a window to commit.
        public static func measure(_ samples: [(diameter: Double, weight: Double, thickness: Double?)]) -> TaughtCoin? {
            guard samples.count >= 2 else { return nil }
            func axis(_ values: [Double]) -> CoinSpread.Axis {
                let mean = values.reduce(0, +) / Double(values.count)
                let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count - 1)
                return CoinSpread.Axis(mean: mean, sigma: max(variance.squareRoot(), abs(mean) * 0.0005))
            }
            let thicknesses = samples.compactMap(\.thickness)
            return TaughtCoin(samples: samples.count, diameter: axis(samples.map(\.diameter)), weight: axis(samples.map(\.weight)),
                              thickness: thicknesses.count == samples.count ? axis(thicknesses) : nil)
        }
    }

    /// Reads a calibration file; errors name the file and what is wrong with it.
    public static func load(path: String) throws(CalibrationError) -> CoinCalibration {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CalibrationError("key 'calibration': cannot read \(path): \((error as NSError).localizedDescription)")
        }
        do {
            return try JSONDecoder().decode(CoinCalibration.self, from: data)
        } catch {
            throw CalibrationError("key 'calibration': \(path) is not a calibration file (\(Self.describe(error)))")
        }
    }

    /// The file's text: pretty-printed JSON with sorted keys, as teach mode should write it.
    public var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            "missing key '\((context.codingPath + [key]).map(\.stringValue).joined(separator: "."))'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "key '\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type"
        case DecodingError.dataCorrupted(let context):
            context.codingPath.isEmpty ? "not valid JSON" : "key '\(context.codingPath.map(\.stringValue).joined(separator: "."))': \(context.debugDescription)"
        default:
            "\(error)"
        }
    }
}
