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
    /// The alloy axis, where it was measured: conductivity at the low and high frequency (% IACS), permeability.
    public var conductivityLowIACS: Double?
    public var conductivityHighIACS: Double?
    public var permeability: Double?
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
    /// For an accepted decision: `pending`, `credited`, `returned` or `unconfirmed`.
    public var state: String?
    /// For `coin`, `coin_returned` and `coin_unconfirmed`: the `seq` of the decision they settle.
    public var refSeq: Int64?
    /// For `collect`: the period's credited totals, and its unconfirmed coins (kept as rows of
    /// their own, not inside the detail).
    public var collected: [TotalsRow]?
    public var collectedUnconfirmed: [TotalsRow]?
    /// For a credit event as it was written: the balance it left (its detail's `balance_minor`).
    public var creditBalanceMinor: Int64?

    public init(
        seq: Int64, time: Double, kind: String, source: String? = nil, epoch: Int64? = nil, deviceSeq: Int64? = nil,
        diameterMM: Double? = nil, weightG: Double? = nil, thicknessMM: Double? = nil, channel: Int64? = nil, verdict: String? = nil,
        currency: String? = nil, denomination: String? = nil, valueMinor: Int64? = nil, link: String? = nil, reason: String? = nil,
        message: String? = nil, chainGeneration: Int64? = nil, detail: String? = nil, state: String? = nil, refSeq: Int64? = nil
    ) {
        self.seq = seq
        self.time = time
        self.kind = kind
        self.source = source
        self.epoch = epoch
        self.deviceSeq = deviceSeq
        self.diameterMM = diameterMM
        self.weightG = weightG
        self.thicknessMM = thicknessMM
        self.channel = channel
        self.verdict = verdict
        self.currency = currency
        self.denomination = denomination
        self.valueMinor = valueMinor
        self.link = link
        self.reason = reason
        self.message = message
        self.chainGeneration = chainGeneration
        self.detail = detail
        self.state = state
        self.refSeq = refSeq
    }
}

extension LedgerEvent {
    /// An accepted decision: not money until the mech stores the coin (a `coin` event follows).
    public var isPendingAccept: Bool { kind == EventKind.decision.rawValue && verdict == "accept" }

    /// The alloy axis as one value: both conductivities, or none.
    public var alloy: AlloySignature? {
        get { conductivityLowIACS.flatMap { low in conductivityHighIACS.map { AlloySignature(lowIACS: low, highIACS: $0, permeability: permeability) } } }
        set {
            conductivityLowIACS = newValue?.lowIACS
            conductivityHighIACS = newValue?.highIACS
            permeability = newValue?.permeability
        }
    }
}
