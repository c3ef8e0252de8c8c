/// How a coin is built, as an eddy-current coil's field meets it: layers of metal from the face
/// the sensor looks at to the other face, and for a two-metal coin a ring and a centre.
public enum CoinConstruction: Sendable, Hashable {
    /// Layers across the whole face (a solid, clad or plated coin, a slug, a washer).
    case stack(LayerStack)
    /// A ring round a centre, each a stack; `centreDiameter` is the centre's share of the coin's diameter.
    case bimetallic(ring: LayerStack, centre: LayerStack, centreDiameter: Double)

    /// One metal throughout.
    public static func solid(_ material: Material) -> CoinConstruction { .stack(LayerStack([.init(material, .rest)])) }

    /// A core with the same cladding bonded to both faces, each face `faceFraction` of the thickness.
    public static func clad(core: Material, cladding: Material, faceFraction: Double) -> CoinConstruction {
        .stack(LayerStack([.init(cladding, .fraction(faceFraction)), .init(core, .rest), .init(cladding, .fraction(faceFraction))]))
    }

    /// A core plated on both faces with `plating`, listed from the outside in, in micrometres.
    public static func plated(core: Material, plating: [(Material, Double)]) -> CoinConstruction {
        .stack(LayerStack(platedLayers(core: core, plating: plating)))
    }

    static func platedLayers(core: Material, plating: [(Material, Double)]) -> [CoinLayer] {
        let outside = plating.map { CoinLayer($0.0, .micrometres($0.1)) }
        return outside + [CoinLayer(core, .rest)] + outside.reversed()
    }

    /// The materials of the coin, outermost first (for people).
    public var summary: String {
        switch self {
        case .stack(let stack): stack.summary
        case .bimetallic(let ring, let centre, _): "ring \(ring.summary), centre \(centre.summary)"
        }
    }
}

/// One layer of a stack.
public struct CoinLayer: Sendable, Hashable {
    public enum Thickness: Sendable, Hashable {
        /// A share of the coin's thickness (a cladding).
        case fraction(Double)
        /// An absolute thickness (a plating).
        case micrometres(Double)
        /// What the other layers leave (the core); shared equally if there are several.
        case rest
    }

    public let material: Material
    public let thickness: Thickness

    public init(_ material: Material, _ thickness: Thickness) {
        self.material = material
        self.thickness = thickness
    }
}

/// Layers from one face to the other.
public struct LayerStack: Sendable, Hashable {
    public let layers: [CoinLayer]

    public init(_ layers: [CoinLayer]) { self.layers = layers }

    /// Each layer's thickness in mm for a coin `total` mm thick.
    public func thicknesses(total: Double) -> [Double] {
        var fixed = 0.0, rests = 0
        for layer in layers {
            switch layer.thickness {
            case .fraction(let share): fixed += share * total
            case .micrometres(let micrometres): fixed += micrometres / 1000
            case .rest: rests += 1
            }
        }
        let rest = max(0, total - fixed) / Double(max(1, rests))
        return layers.map { layer in
            switch layer.thickness {
            case .fraction(let share): share * total
            case .micrometres(let micrometres): micrometres / 1000
            case .rest: rest
            }
        }
    }

    var summary: String {
        var names: [String] = []
        for layer in layers where names.last != layer.material.name { names.append(layer.material.name) }
        return names.joined(separator: " / ")
    }
}
