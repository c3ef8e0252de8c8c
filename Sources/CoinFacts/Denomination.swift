/// A denomination: what a validator recognised, or a coin a cabinet takes.
public struct Denomination: Sendable, Hashable, CustomStringConvertible {
    /// ISO 4217 code, e.g. "USD".
    public var currency: String
    /// Code within the currency, e.g. "quarter".
    public var code: String
    /// Value in minor units (cents).
    public var valueMinor: Int64

    public init(currency: String, code: String, valueMinor: Int64) {
        self.currency = currency
        self.code = code
        self.valueMinor = valueMinor
    }

    public var description: String { "\(currency) \(code) (\(valueMinor))" }
}
