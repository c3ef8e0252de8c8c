/// One recorded event, as read back.
public struct LedgerEvent: Sendable, Hashable, Codable {
    public var seq: Int64
    /// Seconds since 1970.
    public var time: Double
    public var kind: String
    public var source: String?
    public var epoch: Int64?
    public var deviceSeq: Int64?
    public var diameterMM: Double?
    public var weightG: Double?
    public var thicknessMM: Double?
    public var channel: Int64?
    /// "accept" or "reject", for decisions.
    public var verdict: String?
    public var currency: String?
    public var denomination: String?
    public var valueMinor: Int64?
    public var link: String?
    public var reason: String?
    public var message: String?
    public var chainGeneration: Int64?
    /// Operator events' details (JSON object text).
    public var detail: String?
}
