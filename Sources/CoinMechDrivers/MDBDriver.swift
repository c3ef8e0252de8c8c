import CoinMechCCTalk
import CoinMechHotplug
import CoinMechMDB
import CoinMechModel
import CoinMechSettings
import CoinMechSources

/// A vending machine's MDB coin changer, reached through a USB/serial MDB master adapter that
/// speaks ASCII lines (docs/HARDWARE.md, "MDB coin changers"). The changer classifies and keeps
/// each coin itself and reports it in its POLL replies: its credit is the ledger's at once.
public enum MDBDriver: MechDriver {
    public static let kind = "mdb"
    public static let capabilities: MechCapabilities = [.classifiesItself]
    public static let simulator = "coinsim run --protocol mdb"
    public static let keys = ["device", "baud", "poll_interval_ms", "alternative_payout"]

    public struct Settings: MechSettings, Equatable {
        public var device: String
        /// The adapter's serial line (a USB one ignores it).
        public var baud = 115_200
        /// How often the changer is polled; MDB asks for at least every 200 ms or so.
        public var pollInterval: Duration = .milliseconds(100)
        /// Level 3's alternative payout (a value the changer pays in coins it chooses), where
        /// the changer offers it. Off unless asked: with it off, change is paid by DISPENSEs
        /// of the coins the daemon plans, the path the crash suite has proved longest.
        public var alternativePayout = false

        public init(device: String) {
            self.device = device
        }

        public var hotplug: DeviceMatch? { .serialPath(device) }
        public var capabilities: MechCapabilities { [.classifiesItself] }
        /// The changer kept the coin before it said so: its credit is the ledger's, at once.
        public var credit: CreditRule { .atOnce }
        /// Its counter row is at the changer's bus address, 08h; the chain alone narrows its
        /// coin types (one position per type: type n is position n + 1).
        public var acceptor: AcceptorSettings? { AcceptorSettings(address: MDBChangerCommand.address, positions: .all) }
        public var unteachable: String? {
            "an MDB changer classifies coins itself and reports coin types, not measurements: teach it with its maker's tool"
        }

        public func make(_ context: MechContext) -> any Mech {
            MDBMech(path: device, baud: baud, host: hostConfiguration, persisted: context.acceptor?.persisted,
                    positions: context.acceptor?.positions ?? .all, creditable: context.acceptor?.creditableCoinIDs, failpoints: context.failpoints)
        }

        /// What the protocol engine is driven with.
        public var hostConfiguration: MDBChangerHostConfiguration {
            var host = MDBChangerHostConfiguration()
            if !alternativePayout { host.features.remove(.alternativePayout) }
            host.pollIntervalNanoseconds = UInt64(pollInterval.components.seconds) * 1_000_000_000
                + UInt64(pollInterval.components.attoseconds / 1_000_000_000)
            return host
        }
    }

    static let notForMDB = [
        ("file", "is for gpio-replay sources"), ("chip", "is for gpio sources"), ("speed", "is for gpio-replay sources"),
        ("pulse", "is for GPIO mechs"), ("gates", "is for GPIO mechs"), ("scale", "is for GPIO mechs"),
        ("accept_gate", "is for GPIO mechs"), ("inhibit", "is for GPIO mechs: an MDB changer is inhibited over the bus (COIN TYPE)"),
        ("usb", "is for serial sources"),
        ("deadline_ms", "does not apply: an MDB changer keeps the coin before it reports it, so there is no answer to be late"),
        ("commit_allowance_ms", "does not apply: an MDB changer has no answer deadline"),
        ("confirmations", "does not apply: an MDB changer's POLL report is its confirmation"),
        ("confirm_window_ms", "does not apply: an MDB changer's POLL report is its confirmation"),
    ]

    /// Reads a `kind: mdb` source table: device, baud (115200), poll_interval_ms (100).
    public static func parse(_ table: SettingsTable, resolve: (String) -> String) throws(SettingsError) -> Settings {
        for (key, why) in notForMDB where table.contains(key) { throw table.error(key, why) }
        guard let device = try table.string("device"), !device.isEmpty else {
            throw table.error("device", "is required for kind mdb (the MDB adapter's serial port, e.g. /dev/ttyACM0)")
        }
        var mdb = Settings(device: resolve(device))
        if let baud = try table.int("baud") {
            guard [9600, 19200, 38400, 57600, 115200].contains(baud) else {
                throw table.error("baud", "must be one of 9600, 19200, 38400, 57600, 115200 (the adapter's line; 115200 for most), got \(baud)")
            }
            mdb.baud = baud
        }
        if let interval = try table.double("poll_interval_ms") {
            // A changer not polled for a few seconds disables itself and waits for a reset.
            guard (25...1000).contains(interval) else {
                throw table.error("poll_interval_ms", "must be between 25 and 1000 (a changer not polled for seconds disables itself; 100 is usual), got \(interval)")
            }
            mdb.pollInterval = .nanoseconds(Int64(interval * 1e6))
        }
        if let offered = try table.bool("alternative_payout") { mdb.alternativePayout = offered }
        return mdb
    }
}
