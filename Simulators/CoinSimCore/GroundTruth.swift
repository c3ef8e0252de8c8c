import CoinMechModel
import CoinMechSerial

/// What really happened in a session, from the device's side: the report tests compare the
/// daemon's ledger with. Documented field by field in docs/SIMULATOR.md.
public struct GroundTruth: Codable, Sendable {
    public var scenario: String
    public var seed: UInt64
    public var deadlineMs: Double
    public var durationS: Double = 0
    /// Why the session ended: "completed", "signal" or "host_timeout".
    public var ended = "completed"
    public var sent = Sent()
    public var outcomes = Outcomes()
    /// Value of the coins the mech accepted (gate opened in time), per currency; some of them
    /// may still have bounced back out.
    public var acceptedValue: [String: Int64] = [:]
    /// Value of the coins that ended in the cash box, per currency: what a correct host credits
    /// (coins lost with the mech's power count here when they fell in).
    public var storedValue: [String: Int64] = [:]
    /// Value a perfect acceptor would have taken: genuine coins whose sentence went out intact.
    public var creditableValue: [String: Int64] = [:]
    public var coins: [Coin] = []
    public var protocolErrors = ProtocolErrors()
    public var latencyUs = Latency()
    public var faultsInjected = Faults()
    public var connections = Connections()
    public var mech = MechReport()

    public init(scenario: String, seed: UInt64, deadlineMs: Double) {
        self.scenario = scenario
        self.seed = seed
        self.deadlineMs = deadlineMs
    }

    public struct Sent: Codable, Sendable {
        /// Insertions made (coins, slugs, washers, foreign coins), including those the mech
        /// returned itself while inhibited.
        public var insertions = 0
        /// `$CMR` sentences written, duplicates included.
        public var readings = 0
        public var byKind: [String: Int] = [:]
    }

    public struct Outcomes: Codable, Sendable {
        /// Accepted: the host answered A within the deadline.
        public var accepted = 0
        /// Returned because the host answered R within the deadline.
        public var returned = 0
        /// Returned because no answer came within the deadline (late answers count here too).
        public var deadlineMisses = 0
        /// Returned by the mech itself while the host had it inhibited (no reading sent).
        public var inhibited = 0
        /// Sentences the mech garbled on purpose (bad checksum, truncated, overlong): no decision
        /// is possible, so the coin is returned at the deadline. Not counted as misses.
        public var corrupted = 0
        /// Accepted coins that reached the cash box.
        public var stored = 0
        /// Accepted coins that bounced back out (`$CMC,…,R`).
        public var bounced = 0
        /// Accepted coins in flight when the mech lost power: their fate is in `coins`.
        public var powerLost = 0
    }

    /// What the mech told the host beyond answers.
    public struct MechReport: Codable, Sendable {
        /// Its boot numbers, in order.
        public var boots: [UInt64] = []
        public var confirmationsSent = 0
        /// Confirmations the line lost on purpose (`lost_confirmation`).
        public var confirmationsLost = 0
        /// `$CMQ` queries the host sent, and how many the journal answered.
        public var queries = 0
        public var journalAnswers = 0
        public var hellos = 0
    }

    /// One insertion and what became of it.
    public struct Coin: Codable, Sendable {
        public var insertion: Int
        /// Power cycles before this coin (device sequence numbers restart at each).
        public var epoch: Int
        /// The mech's boot number when the coin was inserted.
        public var boot: UInt64?
        public var devseq: UInt64
        public var kind: String
        public var currency: String?
        public var valueMinor: Int64?
        /// "accept", "return", "deadline_miss", "inhibited" or "corrupted".
        public var outcome: String
        public var latencyUs: Int?
        /// A decision that came after the deadline ("A" or "R"); the coin was already returned.
        public var lateDecision: String?
        /// The sentence was sent twice.
        public var duplicated: Bool?
        /// Where the coin ended: "stored" (cash box) or "returned" (return cup); nil while in flight.
        public var fate: String?
        /// What the mech reported of an accepted coin: "S", "R", "lost" (the line lost it),
        /// "power_lost" (no report possible).
        public var confirmation: String?
    }

    public struct ProtocolErrors: Codable, Sendable {
        /// Errors in what the host sent, as the device's parser saw them.
        public var frames = FrameErrorCounts()
        /// Decisions for a device sequence number that had none pending.
        public var unknownDevseq = 0
        /// Second and later decisions for the same reading.
        public var duplicateDecisions = 0
        /// Sentences the host should never send (readings, statuses).
        public var unexpectedSentences = 0
    }

    public struct Latency: Codable, Sendable {
        /// Decisions received (first per reading), on time or late.
        public var count = 0
        public var p50 = 0
        public var p99 = 0
        public var max = 0

        init() {}

        init(samples: [Int]) {
            let sorted = samples.sorted()
            count = sorted.count
            guard !sorted.isEmpty else { return }
            func percentile(_ p: Double) -> Int { sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
            p50 = percentile(0.50)
            p99 = percentile(0.99)
            max = sorted.last!
        }
    }

    public struct Faults: Codable, Sendable {
        public var garbageBursts = 0
        public var garbageBytes = 0
        public var badChecksums = 0
        public var truncated = 0
        public var overlong = 0
        public var duplicates = 0
        public var jams = 0
        public var powerCycles = 0
        public var disconnects = 0
        /// Readings sent again under the same number with another measurement.
        public var falseDuplicates = 0
        /// Reboots while the host was away (`reboot_while_away_every`).
        public var rebootsWhileAway = 0
    }

    public struct Connections: Codable, Sendable {
        /// Times the host opened the device.
        public var connects = 0
        /// Times the host closed it or the simulator pulled it away.
        public var hangups = 0
        /// Device paths the simulator published, in order.
        public var devicePaths: [String] = []
    }
}
