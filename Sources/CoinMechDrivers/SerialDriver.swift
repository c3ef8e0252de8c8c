import CoinMechHotplug
import CoinMechModel
import CoinMechSerial
import CoinMechSettings
import CoinMechSources

/// A raw-sensor mech on a serial line: it measures each coin, waits 50 ms for the answer and
/// confirms what became of every accepted coin (`$CMR`/`$CMD`/`$CMC`, docs/PROTOCOL.md part two).
public enum SerialDriver: MechDriver {
    public static let kind = "serial"
    public static let capabilities: MechCapabilities = [.measures, .confirms, .teachable]
    public static let simulator = "coinsim run (--protocol serial, the default)"
    /// The protocol's mech returns a coin it hears nothing about within 50 ms.
    public static let defaultDeadlineMilliseconds: Double? = 50
    public static let keys = ["device", "baud", "confirmations", "confirm_window_ms", "usb"]

    public struct Settings: MechSettings, Equatable {
        public var device: String
        public var baud: Int
        /// The mech speaks protocol 2 and confirms each accepted coin: credit on its word.
        public var confirmations = true
        public var confirmationWindow: Duration = .seconds(1)
        /// Follow udev's device node (the match is by USB identity, not by path).
        public var followsDevnode = false
        public var hotplug: DeviceMatch?

        public init(device: String, baud: Int) {
            self.device = device
            self.baud = baud
            hotplug = .serialPath(device)
        }

        public var capabilities: MechCapabilities { confirmations ? [.measures, .confirms, .teachable] : [.measures, .teachable] }
        public var credit: CreditRule { confirmations ? .onConfirmation : .atOnce }
        public var lineTiming: LineTiming? { LineTiming(baud: baud, answerFraming: SerialFrame.decisionFraming) }
        public var unteachable: String? { nil }

        public func make(_ context: MechContext) -> any Mech {
            let mech = SerialMech(path: device, baud: baud, confirmsCoins: confirmations, failpoints: context.failpoints)
            mech.followsDevnode = followsDevnode
            return mech
        }
    }

    /// device, baud (9600), confirmations (on), confirm_window_ms (1000), usb (a udev match by
    /// USB identity instead of the path).
    public static func parse(_ sourceTable: SettingsTable, resolve: (String) -> String) throws(SettingsError) -> Settings {
        guard let device = try sourceTable.string("device"), !device.isEmpty else { throw sourceTable.error("device", "is required") }
        let baud = try sourceTable.int("baud") ?? 9600
        guard [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200].contains(baud) else {
            throw sourceTable.error("baud", "must be one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200")
        }
        var serial = Settings(device: resolve(device), baud: baud)
        serial.confirmations = try sourceTable.bool("confirmations") ?? true
        if let window = try sourceTable.double("confirm_window_ms") {
            guard (50...60_000).contains(window) else { throw sourceTable.error("confirm_window_ms", "must be between 50 and 60000") }
            serial.confirmationWindow = .nanoseconds(Int64(window * 1e6))
        }
        if let usb = try sourceTable.table("usb") {
            try usb.rejectUnknownKeys(["vendor", "product", "serial"])
            guard let vendor = try usb.string("vendor"), let product = try usb.string("product") else {
                throw usb.error("vendor and product (hex, as udevadm shows them) are required")
            }
            serial.hotplug = .usb(vendor: vendor, product: product, serial: try usb.string("serial"))
            serial.followsDevnode = true
        }
        return serial
    }
}
