/// What really happened in a `coinsim --protocol cctalk` session: every insertion, every
/// event of the acceptor's buffer and whether a reply carried it to the host before it left
/// the buffer; and every dispense of the payout hoppers beside it, coin by coin paid. A host's
/// ledger joins with it by (session, event): the host's epochs follow the acceptor's sessions.
/// Documented field by field in docs/SIMULATOR.md.
public struct CCTalkGroundTruth: Codable, Sendable {
    public var `protocol` = "cctalk"
    public var scenario: String
    public var seed: UInt64
    public var durationS: Double = 0
    /// "completed", "signal" or "host_timeout".
    public var ended = "completed"
    public var device: Device
    public var sent = Sent()
    public var outcomes = Outcomes()
    /// Value of the coins the acceptor took (credit events), per currency: what a correct host
    /// credits, less the `lost_credits`' value.
    public var creditedValue: [String: Int64] = [:]
    public var coins: [Coin] = []
    public var events: [Event] = []
    /// Events that left the buffer (a newer one pushed them out, or a restart wiped it) before
    /// any reply carried them, and the credits among them.
    public var lostEvents = 0
    public var lostCredits = 0
    public var lostValue: [String: Int64] = [:]
    public var sessions = Sessions()
    public var polls = Polls()
    public var connections = GroundTruth.Connections()
    /// The payout hoppers on the bus, in scenario order.
    public var hoppers: [Hopper] = []

    public init(scenario: String, seed: UInt64, device: Device) {
        self.scenario = scenario
        self.seed = seed
        self.device = device
    }

    public struct Device: Codable, Sendable {
        public var address: UInt8
        public var checksum: String
        public var echo: Bool
        public var serialNumber: UInt32
        /// Position (as a string) → coin id.
        public var coinIds: [String: String]
        /// The counter at the start (above 0: events before the host came).
        public var initialCounter: UInt8
    }

    /// What a hopper paid: every coin that dropped counts once in `paidCoins`, and once in the
    /// `paid` of the dispense it belonged to.
    public struct Hopper: Codable, Sendable {
        public var address: UInt8
        public var coinId: String
        public var valueMinor: Int64
        public var serialNumber: UInt32
        /// Coins in it at the start and at the end.
        public var coinsStart: Int
        public var coinsEnd: Int
        public var paidCoins: Int
        public var paidMinor: Int64
        /// Faults played: power lost mid-payout, a coin jammed, ran out mid-payout.
        public var powerDowns: Int
        public var jams: Int
        public var empties: Int
        /// The line's faults (its replies lost after it acted, requests refused with NAK or
        /// BUSY), serial number requests it refused, and times it was exchanged for another.
        public var lostReplies: Int
        public var naks: Int
        public var busies: Int
        public var hiddenSerials: Int
        public var exchanges: Int
        public var dispenses: [Dispense]
    }

    /// One dispense (167) the hopper took; `asked` = `paid` + `unpaid`.
    public struct Dispense: Codable, Sendable {
        /// The event counter it gave.
        public var counter: UInt8
        public var asked: Int
        public var paid: Int
        /// Left unpaid when it stopped; for one `under_way`, still to pay when the session ended.
        public var unpaid: Int
        /// "done", "empty", "jam", "power_down", "emergency_stop", "reset" or "under_way".
        public var ended: String
    }

    public struct Sent: Codable, Sendable {
        public var insertions = 0
        public var byKind: [String: Int] = [:]
    }

    public struct Outcomes: Codable, Sendable {
        /// Taken: a credit event.
        public var credited = 0
        /// Known coins returned because their position, the whole acceptor (master inhibit),
        /// or the acceptor itself (not polled) inhibited them.
        public var inhibited = 0
        /// Of those, returned because nobody had polled for a second.
        public var selfInhibited = 0
        /// Not coins it accepts (slugs, washers, foreign or unprogrammed coins).
        public var rejected = 0
    }

    /// One insertion.
    public struct Coin: Codable, Sendable {
        public var insertion: Int
        public var kind: String
        public var currency: String?
        public var valueMinor: Int64?
        /// The position the acceptor recognised it as.
        public var position: Int?
        public var coinId: String?
        /// "credited", "inhibited" or "rejected".
        public var outcome: String
        /// Its event: the acceptor's session (0 first, one more per reset or power-up) and
        /// number in the session (unwrapped), and the counter it had.
        public var session: Int
        public var event: UInt64
        public var counter: UInt8
    }

    /// One event of the buffer.
    public struct Event: Codable, Sendable {
        public var session: Int
        public var event: UInt64
        public var counter: UInt8
        public var a: UInt8
        public var b: UInt8
        /// In the buffer before the host came (`counter` at the start): never credit.
        public var beforeHost: Bool
        /// Carried to the host by an intact reply.
        public var reported: Bool
        /// Left the buffer without that.
        public var lost: Bool
        /// How it left unreported: "overrun" (newer events pushed it out: a host sees the gap
        /// and names it) or "restart" (a reset or power cycle wiped the buffer: no host can
        /// know it was there).
        public var lostTo: String?
    }

    public struct Sessions: Codable, Sendable {
        /// Resets the scenario asked for, resets the host sent (header 1), power cycles.
        public var resets = 0
        public var hostResets = 0
        public var powerCycles = 0
    }

    public struct Polls: Codable, Sendable {
        /// Frames for the acceptor, and the buffer polls among them.
        public var requests = 0
        public var bufferPolls = 0
        public var replies = 0
        /// Buffer polls answered wrongly on purpose.
        public var lostReplies = 0
        public var naks = 0
        public var busies = 0
        public var badChecksums = 0
        /// Requests the acceptor does not know (answered NAK).
        public var unknownHeaders = 0
        /// Bytes of the host's own requests given back (echo).
        public var echoBytes = 0
        /// What the acceptor's receiver skipped in what the host sent.
        public var garbageBytes = 0
        public var badRequestChecksums = 0
        /// Longest time without a poll while the host had the device open, in ms.
        public var longestGapMs = 0.0
    }
}
