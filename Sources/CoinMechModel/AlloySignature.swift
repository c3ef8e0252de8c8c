/// The alloy axis of a reading: how the coin looks to the mech's eddy-current sensor. Diameter,
/// weight and thickness are matched by slugs and foreign twins; the alloy is not.
///
/// - `lowIACS`, `highIACS`: the apparent conductivity at the mech's low and high frequency, in
///   % IACS (100 % is annealed copper, 58 MS/m). Coin alloys read about 4–55 %; a clad or plated
///   coin reads differently at the two, because the field reaches deeper at the low one.
/// - `permeability`: the apparent relative permeability, 1 for a coin that is not magnetic, about
///   200 for steel; nil from a mech without a magnetic sensor.
public struct AlloySignature: Sendable, Hashable, Codable {
    public var lowIACS: Double
    public var highIACS: Double
    public var permeability: Double?

    public init(lowIACS: Double, highIACS: Double, permeability: Double? = nil) {
        self.lowIACS = lowIACS
        self.highIACS = highIACS
        self.permeability = permeability
    }

    /// No metal reads half again as well as copper (silver, the best conductor, is 108 % IACS):
    /// beyond it a figure is a fault of the sensor or the line. 0 is a coin of no metal at all.
    public static let iacsRange = 0.0...150.0
    /// Mu-metal reaches about 10⁵; nothing reads 0.
    public static let permeabilityLimit = 100_000.0
    /// The smallest permeability the line carries: its three decimals would send anything below
    /// as 0.000, which nothing reads, so a reading accepted here would change on the way on.
    public static let permeabilityMinimum = 0.001

    /// Checks the figures a mech sent: none at all is no alloy axis (nil); a figure that cannot be
    /// a measurement, or one frequency without the other, is a fault naming the field.
    public static func checked(lowIACS: Double?, highIACS: Double?, permeability: Double?) -> Result<AlloySignature?, AlloyFault> {
        if lowIACS == nil, highIACS == nil {
            guard let permeability else { return .success(nil) }
            return .failure(AlloyFault(.incomplete, "permeability \(permeability) without conductivity_low and conductivity_high: no alloy axis to judge"))
        }
        guard let low = lowIACS else { return .failure(AlloyFault(.incomplete, "conductivity_high without conductivity_low: one frequency is not an alloy axis")) }
        guard let high = highIACS else { return .failure(AlloyFault(.incomplete, "conductivity_low without conductivity_high: one frequency is not an alloy axis")) }
        for (field, value) in [(AlloyFault.Field.conductivityLow, low), (.conductivityHigh, high)] where !(value.isFinite && iacsRange.contains(value)) {
            return .failure(AlloyFault(field, "\(field.rawValue) \(value) % IACS is not a measurement (0 to \(Int(iacsRange.upperBound)))"))
        }
        if let permeability, !(permeability.isFinite && permeability >= permeabilityMinimum && permeability <= permeabilityLimit) {
            return .failure(AlloyFault(.permeability, "permeability \(permeability) is not a measurement (\(permeabilityMinimum) to \(Int(permeabilityLimit)))"))
        }
        return .success(AlloySignature(lowIACS: low, highIACS: high, permeability: permeability))
    }
}

/// Alloy figures a mech sent that cannot be measurements: the coin is returned with a reason
/// that names the field, counted, and never matched.
public struct AlloyFault: Error, Sendable, Hashable, CustomStringConvertible {
    /// The field at fault; its reason code is `bad_<field>`, or `alloy_incomplete`.
    public enum Field: String, Sendable, Hashable {
        case conductivityLow = "conductivity_low"
        case conductivityHigh = "conductivity_high"
        case permeability
        /// One frequency without the other, or a permeability alone.
        case incomplete
    }

    public var field: Field
    /// For people: the field, the figure and why it is not one.
    public var message: String

    public init(_ field: Field, _ message: String) {
        self.field = field
        self.message = message
    }

    /// The decision's reason code: `bad_conductivity_low`, `bad_conductivity_high`, `bad_permeability`, `alloy_incomplete`.
    public var reason: String { field == .incomplete ? "alloy_incomplete" : "bad_\(field.rawValue)" }

    public var description: String { message }
}
