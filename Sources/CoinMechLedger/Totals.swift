/// Money in one period, per currency and denomination.
public struct TotalsRow: Sendable, Hashable, Codable {
    public var currency: String
    public var denomination: String
    public var count: Int64
    public var valueMinor: Int64
    /// Sum of the measured weights of the coins: what the cash box should weigh.
    public var weightG: Double

    public init(currency: String, denomination: String, count: Int64, valueMinor: Int64, weightG: Double) {
        self.currency = currency
        self.denomination = denomination
        self.count = count
        self.valueMinor = valueMinor
        self.weightG = weightG
    }
}

/// Totals since the last collection (the cash box) and over the ledger's lifetime.
public struct Totals: Sendable, Hashable, Codable {
    public var current: [TotalsRow]
    public var lifetime: [TotalsRow]

    public init(current: [TotalsRow], lifetime: [TotalsRow]) {
        self.current = current
        self.lifetime = lifetime
    }

    /// Value per currency of a period's rows.
    public static func value(of rows: [TotalsRow]) -> [String: Int64] {
        rows.reduce(into: [:]) { $0[$1.currency, default: 0] += $1.valueMinor }
    }
}

/// What the ledger knows of a source, to continue its device numbering after a restart.
public struct SourceState: Sendable {
    public var epoch: Int64
    public var lastDeviceSeq: UInt64?
    /// The latest decisions of the current epoch, oldest first.
    public var recent: [RecentDecision]
}

public struct RecentDecision: Sendable, Hashable {
    public var deviceSeq: UInt64
    public var diameterMM: Double?
    public var weightG: Double?
    public var thicknessMM: Double?
    public var channel: UInt32?
    public var accepted: Bool
}
