import CoinMechMDB
import CoinMechSettings

/// What `--protocol mdb` plays besides the coins: faults at given insertions (`mdb` block).
///
///     mdb:
///       faults:
///         lost_poll_reply_at: [5, 12]   # the POLL reply reporting coin 5 never reaches the host
///         status_at: {"8": 13}          # after coin 8 the changer reports status 0Dh
public struct MDBScenario: Sendable, Hashable {
    public var faults = Faults()

    public struct Faults: Sendable, Hashable {
        /// Insertion numbers whose kept coin's POLL reply the adapter loses: the changer has
        /// forgotten the events (POLL is destructive) and the host gets no answer.
        public var lostPollReplyAt: [Int] = []
        /// Insertion number → a status code (`MDBChangerStatus`) the changer reports after it.
        public var statusAt: [Int: MDBChangerStatus] = [:]

        public init() {}
    }

    public init() {}

    static let keys: Set<String> = ["faults"]

    /// Reads the `mdb` table; errors name the file, the line and the key.
    public static func parse(_ table: SettingsTable) throws(SettingsError) -> MDBScenario {
        try table.rejectUnknownKeys(keys)
        var s = MDBScenario()
        if let faults = try table.table("faults") {
            try faults.rejectUnknownKeys(["lost_poll_reply_at", "status_at"])
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
