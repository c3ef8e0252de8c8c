/// Where one denomination's readings fall on a mech: the centre and the standard deviation (σ)
/// of each axis. A reading's distance to a denomination is measured in these σ.
public struct CoinSpread: Sendable, Hashable, Codable {
    /// One axis: mean and standard deviation, in mm or g.
    public struct Axis: Sendable, Hashable, Codable {
        public var mean: Double
        public var sigma: Double

        public init(mean: Double, sigma: Double) {
            self.mean = mean
            self.sigma = sigma
        }
    }

    public var diameter: Axis
    public var weight: Axis
    /// Nil where the denomination's thickness is not known (it then never counts).
    public var thickness: Axis?

    public init(diameter: Axis, weight: Axis, thickness: Axis?) {
        self.diameter = diameter
        self.weight = weight
        self.thickness = thickness
    }

    /// The spread a mech should see before it is taught: centred on the mint's figures, with
    /// the coins' own spread (the mint tolerance read as ±3σ, `mintSigma`) and the sensor's
    /// noise combined (independent errors: the variances add).
    public static func nominal(
        diameter: Double, weight: Double, thickness: Double?,
        mintSigma: (diameter: Double, weight: Double, thickness: Double?), sensorNoise: SensorNoise
    ) -> CoinSpread {
        func axis(_ nominal: Double, _ mint: Double, _ relativeNoise: Double) -> Axis {
            let sensor = nominal * relativeNoise
            return Axis(mean: nominal, sigma: (mint * mint + sensor * sensor).squareRoot())
        }
        return CoinSpread(
            diameter: axis(diameter, mintSigma.diameter, sensorNoise.diameter),
            weight: axis(weight, mintSigma.weight, sensorNoise.weight),
            thickness: thickness.map { axis($0, mintSigma.thickness ?? 0, sensorNoise.thickness) })
    }

    /// How many σ a reading lies from the centre on each axis; nil for an axis the reading or
    /// the denomination lacks.
    public func zScores(diameter d: Double, weight w: Double?, thickness t: Double?) -> (diameter: Double, weight: Double?, thickness: Double?) {
        ((d - diameter.mean) / diameter.sigma,
         w.map { ($0 - weight.mean) / weight.sigma },
         thickness.flatMap { axis in t.map { ($0 - axis.mean) / axis.sigma } })
    }

    /// Normalised (Mahalanobis, axes independent) distance: √Σ z² over the axes both have.
    public func distance(diameter d: Double, weight w: Double?, thickness t: Double?) -> Double {
        let z = zScores(diameter: d, weight: w, thickness: t)
        return (z.diameter * z.diameter + (z.weight ?? 0) * (z.weight ?? 0) + (z.thickness ?? 0) * (z.thickness ?? 0)).squareRoot()
    }
}

/// A mech's sensor noise: the standard deviation of repeated measurements of one coin, per axis,
/// relative to the figure measured (0.02 = 2 %).
public struct SensorNoise: Sendable, Hashable, Codable {
    public var diameter: Double
    public var weight: Double
    public var thickness: Double

    public init(diameter: Double, weight: Double, thickness: Double) {
        self.diameter = diameter
        self.weight = weight
        self.thickness = thickness
    }

    /// A decent mech: 0.6 % diameter (0.15 mm on a 24 mm coin), a 2 % load cell, 2 % thickness.
    public static let typical = SensorNoise(diameter: 0.006, weight: 0.02, thickness: 0.02)
}
