/// What a mech can do: the daemon and its operator act on these, not on the kind's name.
public struct MechCapabilities: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Its readings carry measurements (diameter, weight): the chain classifies the coin.
    public static let measures = MechCapabilities(rawValue: 1 << 0)
    /// It says what became of each accepted coin: credit waits for its word.
    public static let confirms = MechCapabilities(rawValue: 1 << 1)
    /// It classifies coins itself and reports what it took (a coin id or a channel).
    public static let classifiesItself = MechCapabilities(rawValue: 1 << 2)
    /// Teach mode can fit windows from its sample coins (it measures a diameter and a weight).
    public static let teachable = MechCapabilities(rawValue: 1 << 3)

    public var description: String {
        let names: [(MechCapabilities, String)] = [(.measures, "measures"), (.confirms, "confirms"), (.classifiesItself, "classifies itself"), (.teachable, "teachable")]
        let present = names.filter { contains($0.0) }.map(\.1)
        return present.isEmpty ? "none" : present.joined(separator: ", ")
    }
}
