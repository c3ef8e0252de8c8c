/// What really happened in a `coinsim --protocol mdb` session: every insertion and where the
/// changer put it, and its tubes at the end. A host's ledger joins with it coin by coin in
/// order: MDB numbers nothing, so the kept coins, in order, are what a host must credit.
public struct MDBGroundTruth: Codable, Sendable {
    public var `protocol` = "mdb"
    public var scenario: String
    public var seed: UInt64
    public var durationS: Double = 0
    /// "completed", "signal" or "host_timeout".
    public var ended = "completed"
    /// The changer's currency (ISO 4217) and its coin types' values in minor units, by type.
    public var currency: String
    public var typeValues: [Int64]
    public var sent = CCTalkGroundTruth.Sent()
    public var coins: [Coin] = []
    public var outcomes = Outcomes()
    /// Value of the coins the changer kept (to a tube or the cash box), per currency: what a
    /// correct host credits.
    public var keptValue: [String: Int64] = [:]
    public var tubesAtEnd: [Int] = []
    /// The coin types the changer took when the session ended (COIN TYPE's mask, bit n: type
    /// n): 0 after a host that let go of it cleanly.
    public var enabledAtEnd = 0
    /// POLL replies the adapter lost (`mdb.faults.lost_poll_reply_at`), and the statuses the
    /// changer reported (`mdb.faults.status_at`), as their codes.
    public var lostPollReplies = 0
    public var statusesReported: [Int] = []
    /// Other replies the adapter lost (`mdb.faults.lost_reply`), and TUBE STATUS replies that
    /// counted a tube a coin high after a payout (`mdb.faults.tube_lag`).
    public var lostReplies = 0
    public var tubeLags = 0
    /// Every DISPENSE the changer took, in order, with what it paid; and the value paid out
    /// per currency: what a correct host's payout journal records, coin for coin.
    public var payouts: [Payout] = []
    /// Every alternative payout (PAYOUT 0Fh 02h) the changer took, in order: the value asked
    /// and paid. Its coins are rows of `payouts` too, marked with its number.
    public var valuePayouts: [ValuePayout] = []
    public var paidOutValue: [String: Int64] = [:]
    /// Lines from the host, and those the adapter could not read.
    public var hostLines = 0
    public var unreadableLines = 0
    public var connections = GroundTruth.Connections()

    public init(scenario: String, seed: UInt64, currency: String, typeValues: [Int64]) {
        self.scenario = scenario
        self.seed = seed
        self.currency = currency
        self.typeValues = typeValues
    }

    public struct Coin: Codable, Sendable {
        public var insertion: Int
        public var kind: String
        public var currency: String?
        public var valueMinor: Int64?
        /// The changer's coin type, for a coin it knows.
        public var type: Int?
        /// "tube", "cash_box" or "rejected".
        public var fate: String
        /// Kept, but the POLL reply that reported it was lost: no host can credit it.
        public var replyLost: Bool?
    }

    public struct Payout: Codable, Sendable {
        public var type: Int
        public var asked: Int
        public var paid: Int
        public var valueMinor: Int64
        /// "paid", "jam" or "reset" (a reset or power cycle stopped it).
        public var ended: String
        /// The alternative payout these coins were part of (`valuePayouts`' number); nil for a
        /// DISPENSE.
        public var alternative: Int?
    }

    public struct ValuePayout: Codable, Sendable {
        public var number: Int
        public var askedMinor: Int64
        public var paidMinor: Int64
        public var ended: String
    }

    public struct Outcomes: Codable, Sendable {
        public var tube = 0
        public var cashBox = 0
        /// Returned: a type the host had not enabled, or not a coin the changer knows.
        public var rejected = 0
        public var slugs = 0
    }
}
