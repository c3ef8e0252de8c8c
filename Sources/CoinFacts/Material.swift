/// A coin metal as an eddy-current sensor sees it: how well it conducts, how that changes with
/// temperature, and whether it is magnetic. The figures of the metals coins and slugs are made
/// of are in `Materials`, each with its source.
public struct Material: Sendable, Hashable, CustomStringConvertible {
    /// "CuNi25 (cupro-nickel 75/25)".
    public let name: String
    /// Conductivity at 20 °C in % IACS: 100 % is annealed copper, 58.0 MS/m (IEC 60028).
    public let iacs: Double
    /// Temperature coefficient of the resistivity at 20 °C, per kelvin (copper: 0.00393).
    public let temperatureCoefficient: Double
    /// Relative permeability in the weak fields of a coin sensor (1: not magnetic).
    public let permeability: Double

    public init(name: String, iacs: Double, temperatureCoefficient: Double, permeability: Double = 1) {
        self.name = name
        self.iacs = iacs
        self.temperatureCoefficient = temperatureCoefficient
        self.permeability = permeability
    }

    /// 100 % IACS in siemens per metre: 1 / (1.7241 µΩ·cm).
    public static let iacsSiemensPerMetre = 58.0e6

    /// Conductivity in % IACS at `celsius`: the resistivity grows by the coefficient per kelvin.
    public func iacs(at celsius: Double) -> Double { iacs / (1 + temperatureCoefficient * (celsius - 20)) }

    /// Resistivity at 20 °C in µΩ·cm.
    public var microhmCentimetres: Double { 172.41 / iacs }

    public var description: String { name }
}
