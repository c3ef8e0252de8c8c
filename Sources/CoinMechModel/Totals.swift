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

/// Credit since the last collection (the cash box) and over the ledger's lifetime, and, for
/// audit, the accepts not (yet) credited: `pending` (waiting for the mech to store them) and
/// `unconfirmed` since the last collection (no confirmation can settle them: match them
/// against the cash box). Only credited coins are customer credit.
public struct Totals: Sendable, Hashable, Codable {
    public var current: [TotalsRow]
    public var lifetime: [TotalsRow]
    public var pending: [TotalsRow]
    public var unconfirmed: [TotalsRow]

    public init(current: [TotalsRow], lifetime: [TotalsRow], pending: [TotalsRow] = [], unconfirmed: [TotalsRow] = []) {
        self.current = current
        self.lifetime = lifetime
        self.pending = pending
        self.unconfirmed = unconfirmed
    }

    /// Value per currency of a period's rows.
    public static func value(of rows: [TotalsRow]) -> [String: Int64] {
        rows.reduce(into: [:]) { $0[$1.currency, default: 0] += $1.valueMinor }
    }
}

/// What the ledger knows of a source, to continue its device numbering after a restart.
public struct SourceState: Sendable {
    public var epoch: Int64
    /// The mech's boot number for `epoch`, once the mech has named it.
    public var boot: UInt64?
    public var lastDeviceSeq: UInt64?
    /// The latest decisions of the current epoch, oldest first.
    public var recent: [RecentDecision]

    public init(epoch: Int64, boot: UInt64?, lastDeviceSeq: UInt64?, recent: [RecentDecision]) {
        self.epoch = epoch
        self.boot = boot
        self.lastDeviceSeq = lastDeviceSeq
        self.recent = recent
    }
}

/// An accepted coin waiting for the mech to say what became of it.
public struct PendingRecord: Sendable, Hashable {
    /// The decision's `seq`.
    public var seq: Int64
    public var epoch: Int64
    /// The boot number of the mech's session the coin was decided in, if known.
    public var boot: UInt64?
    public var deviceSeq: UInt64
    /// Seconds since 1970 of the decision's commit.
    public var time: Double

    public init(seq: Int64, epoch: Int64, boot: UInt64?, deviceSeq: UInt64, time: Double) {
        self.seq = seq
        self.epoch = epoch
        self.boot = boot
        self.deviceSeq = deviceSeq
        self.time = time
    }
}

public struct RecentDecision: Sendable, Hashable {
    public var deviceSeq: UInt64
    public var diameterMM: Double?
    public var weightG: Double?
    public var thicknessMM: Double?
    public var channel: UInt32?
    public var accepted: Bool
    /// The alloy axis, where it was measured.
    public var alloy: AlloySignature?

    public init(deviceSeq: UInt64, diameterMM: Double?, weightG: Double?, thicknessMM: Double?, channel: UInt32?, accepted: Bool) {
        self.deviceSeq = deviceSeq
        self.diameterMM = diameterMM
        self.weightG = weightG
        self.thicknessMM = thicknessMM
        self.channel = channel
        self.accepted = accepted
    }
}
