/// A coin as the mint specifies it: the nominal figures a validator compares readings with.
public struct CoinSpec: Sendable, Hashable {
    /// ISO 4217 currency code, e.g. "USD".
    public let currency: String
    /// Denomination code, unique within its currency, e.g. "quarter" or "EUR_2".
    public let code: String
    /// Face value in minor units (cents, pence).
    public let valueMinor: Int64
    public let diameterMM: Double
    public let weightG: Double
    /// Nil where the mint figure is not recorded here.
    public let thicknessMM: Double?
    /// The mint's manufacturing tolerance (±), where it publishes one; see `MintTolerance`.
    public let tolerance: MintTolerance

    public init(
        currency: String, code: String, valueMinor: Int64, diameterMM: Double, weightG: Double, thicknessMM: Double?,
        tolerance: MintTolerance = MintTolerance()
    ) {
        self.currency = currency
        self.code = code
        self.valueMinor = valueMinor
        self.diameterMM = diameterMM
        self.weightG = weightG
        self.thicknessMM = thicknessMM
        self.tolerance = tolerance
    }
}
