/// What a mech that takes coins itself (a ccTalk acceptor, an MDB changer) says of itself for
/// `status`, in plain values: each driver fills the parts it has, as gpsd's drivers each report
/// what their receiver can say. The daemon adds what its cores counted; the protocol writes it
/// (`StatusReply.Acceptor`).
public struct DeviceStatus: Sendable, Equatable {
    public var responding: Bool
    /// Its coins cannot be recorded, so it is held taking none.
    public var heldForLedger = false
    /// Whether it takes coins now, as it last confirmed (nil: not confirmed yet).
    public var accepting: Bool?
    /// Who answered, once it has said.
    public var identity: Identity?
    /// A coin acceptor's own state: its coin positions, its event counter, its faults, its line.
    public var acceptor: Acceptor?
    /// A changer's: its coin types, its tubes, what it takes.
    public var changer: Changer?
    /// Payout hoppers on its bus.
    public var hoppers: Hoppers?

    public init(responding: Bool) {
        self.responding = responding
    }

    public struct Identity: Sendable, Equatable {
        public var manufacturer: String
        public var product: String
        public var serialNumber: String

        public init(manufacturer: String, product: String, serialNumber: String) {
            self.manufacturer = manufacturer
            self.product = product
            self.serialNumber = serialNumber
        }
    }

    public struct Acceptor: Sendable, Equatable {
        public var identified = false
        /// Position → coin id.
        public var coins: [Int: String] = [:]
        public var enabledPositions: String?
        /// The counter as the ledger last recorded it: epoch, event number, the device's counter.
        public var epoch: UInt64?
        public var eventNumber: UInt64?
        public var counter: UInt8?
        /// A fault it reports (its self-check), for people; nil when none.
        public var fault: String?
        public var polls = 0
        public var timeouts = 0
        public var retries = 0
        public var naks = 0
        public var busies = 0

        public init() {}
    }

    public struct Changer: Sendable, Equatable {
        /// Coin type → its coin id (`USD25`) and value, for the types with a value.
        public var coins: [Int: String] = [:]
        public var values: [Int: Int64] = [:]
        /// The ISO 4217 letters of its currency, where known.
        public var currency: String?
        public var tubes: [Int] = []
        /// The coin types it takes now (COIN TYPE, as acknowledged); nil when unknown.
        public var acceptingTypes: UInt16?
        public var level: UInt8?
        /// The number the daemon gave the last coin it reported.
        public var lastCoin: UInt64 = 0
        /// Held at COIN TYPE 0 for a payout under way, or one left open.
        public var heldForPayout = false

        public init() {}
    }

    public struct Hoppers: Sendable, Equatable {
        /// The currency they pay.
        public var currency: String?
        /// Held for a payout: enabled only for the dispense under way.
        public var held = false
        public var units: [Hopper] = []

        public init() {}
    }

    public struct Hopper: Sendable, Equatable {
        public var unit: Int
        public var address: UInt8
        public var coinID: String
        public var valueMinor: Int64
        public var responding = true
        /// It could take a dispense now (no fault waiting for a reset, answering, its coin).
        public var canPay = false
        /// Its registers, for people ("not read" until read).
        public var flags = "not read"
        public var serialNumber: UInt32?
        /// The coin it says it pays, when it is not the configured one.
        public var reportedCoin: String?
        /// Its status (header 166): event counter, coins still to pay, the last payout's paid
        /// and unpaid counts.
        public var eventCounter: UInt8?
        public var paying: Int?
        public var lastPaid: Int?
        public var lastUnpaid: Int?

        public init(unit: Int, address: UInt8, coinID: String, valueMinor: Int64) {
            self.unit = unit
            self.address = address
            self.coinID = coinID
            self.valueMinor = valueMinor
        }
    }
}
