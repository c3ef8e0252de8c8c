/// A decided coin as the ledger records it: who, what was measured, what was decided and by
/// which link of which chain. Plain values: the ledger knows nothing of the plugin ABI.
public struct DecisionRecord: Sendable, Equatable {
    public var source: String
    /// The mech's power-up count as the host saw it; with `deviceSeq`, the coin's identity.
    public var epoch: Int64
    public var deviceSeq: UInt64
    public var diameterMM: Double?
    public var weightG: Double?
    public var thicknessMM: Double?
    public var channel: UInt32?
    /// The alloy axis, where it was measured.
    public var alloy: AlloySignature?
    public var verdict: Verdict
    /// The deciding link (a chain link, or the host's `source`, `inhibit`, `deadline`, `unrecognized`).
    public var link: String
    public var chainGeneration: UInt64
    /// What else names the coin, stored as the event's `detail` (a coin acceptor's `coin_id`
    /// and `sorter_path`); nil for none.
    public var detail: [String: String]?
    /// When it was decided, as the event's `time` (seconds since 1970), when that was fixed
    /// before its commit: a decision the journal made durable keeps the time it was published
    /// with when a replay puts it back on the ledger. Nil: the commit's own time.
    public var time: Double?

    public enum Verdict: Sendable, Equatable {
        case accept(currency: String, code: String, valueMinor: Int64)
        case reject(reason: String, message: String)

        public var isAccept: Bool {
            if case .accept = self { return true }
            return false
        }
    }

    public init(source: String, epoch: Int64, deviceSeq: UInt64, diameterMM: Double?, weightG: Double?, thicknessMM: Double?,
                channel: UInt32?, verdict: Verdict, link: String, chainGeneration: UInt64, alloy: AlloySignature? = nil) {
        self.alloy = alloy
        self.source = source
        self.epoch = epoch
        self.deviceSeq = deviceSeq
        self.diameterMM = diameterMM
        self.weightG = weightG
        self.thicknessMM = thicknessMM
        self.channel = channel
        self.verdict = verdict
        self.link = link
        self.chainGeneration = chainGeneration
    }
}
