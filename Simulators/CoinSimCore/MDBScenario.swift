import CoinMechMDB
import CoinMechSettings

/// What `--protocol mdb` plays besides the coins: faults at given insertions (`mdb` block).
///
///     mdb:
///       faults:
///         lost_poll_reply_at: [5, 12]   # the POLL reply reporting coin 5 never reaches the host
///         status_at: {"8": 13}          # after coin 8 the changer reports status 0Dh
///         payout_jam_after: 3           # the 4th coin paid out sticks: tube jam, the rest unpaid
///         reset_during_payout_after: 2  # the changer resets (power cycle) after paying 2 coins
///         lost_reply: 0.02              # a reply that carries no coin is lost (the changer acted)
///         tube_lag: 0.3                 # after a payout, the next TUBE STATUS counts its tube a coin high
///       pay_interval_ms: 700          # a coin paid out every 700 ms (default 80)
///       alternative_payout: true      # level 3's optional PAYOUT of a value (default false)
public struct MDBScenario: Sendable, Hashable {
    public var faults = Faults()
    /// The changer offers level 3's alternative payout (an optional feature: many do not).
    public var alternativePayout = false
    /// A coin paid out every so often while a DISPENSE lasts (field changers pay 3 to 10 a second).
    public var payIntervalMilliseconds = 80

    public struct Faults: Sendable, Hashable {
        /// Insertion numbers whose kept coin's POLL reply the adapter loses: the changer has
        /// forgotten the events (POLL is destructive) and the host gets no answer.
        public var lostPollReplyAt: [Int] = []
        /// Insertion number → a status code (`MDBChangerStatus`) the changer reports after it.
        public var statusAt: [Int: MDBChangerStatus] = [:]
        /// Coins paid out in the session after which the next one jams (the payout stops short).
        public var payoutJamAfter: Int?
        /// Coins paid out in the session after which the changer resets, as at a power cycle
        /// mid-payout: the payout stops, its tube counts stay.
        public var resetDuringPayoutAfter: Int?
        /// The chance that the adapter loses a reply, after the changer acted on its line:
        /// any reply but a POLL's that reports a coin kept (that one is `lost_poll_reply_at`'s).
        public var lostReply = 0.0
        /// The chance, each time a payout ends, that the next TUBE STATUS counts its tube one
        /// coin high (a level sensor not caught up): the count disagrees with the DISPENSE.
        public var tubeLag = 0.0

        public init() {}
    }

    public init() {}

    static let keys: Set<String> = ["faults", "pay_interval_ms", "alternative_payout"]

    /// Reads the `mdb` table; errors name the file, the line and the key.
    public static func parse(_ table: SettingsTable) throws(SettingsError) -> MDBScenario {
        try table.rejectUnknownKeys(keys)
        var s = MDBScenario()
        if let interval = try table.int("pay_interval_ms", in: 10...5_000) { s.payIntervalMilliseconds = interval }
        if let offered = try table.bool("alternative_payout") { s.alternativePayout = offered }
        if let faults = try table.table("faults") {
            try faults.rejectUnknownKeys(["lost_poll_reply_at", "status_at", "payout_jam_after", "reset_during_payout_after", "lost_reply", "tube_lag"])
            for (key, path) in [("lost_reply", \Faults.lostReply), ("tube_lag", \Faults.tubeLag)] {
                guard let chance = try faults.double(key) else { continue }
                guard (0...1).contains(chance) else { throw faults.error(key, "must be a chance from 0 to 1") }
                s.faults[keyPath: path] = chance
            }
            for (key, path) in [("payout_jam_after", \Faults.payoutJamAfter), ("reset_during_payout_after", \Faults.resetDuringPayoutAfter)] {
                guard let count = try faults.int(key) else { continue }
                guard count >= 0 else { throw faults.error(key, "must be a number of coins paid out, 0 or more") }
                s.faults[keyPath: path] = count
            }
            s.faults.lostPollReplyAt = try Scenario.insertionNumbers(faults, "lost_poll_reply_at")
            if let statuses = try faults.table("status_at") {
                for key in statuses.keys {
                    guard let insertion = Int(key), insertion >= 1 else { throw statuses.error(key, "keys are insertion numbers from 1") }
                    guard let code = try statuses.int(key), let status = MDBChangerStatus(rawValue: UInt8(clamping: code)), code > 0 else {
                        throw statuses.error(key, "must be an MDB changer status code, 1 to 13 (13: possible credited coin removal)")
                    }
                    s.faults.statusAt[insertion] = status
                }
            }
        }
        return s
    }
}
