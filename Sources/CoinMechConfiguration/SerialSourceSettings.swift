import CoinMechHotplug
import CoinMechSettings

extension SourceConfiguration.Serial {
    /// Reads a `kind: serial` source table: device, baud (9600), confirmations (on),
    /// confirm_window_ms (1000), usb (a udev match by USB identity instead of the path).
    static func parse(_ sourceTable: SettingsTable, resolve: (String) -> String) throws(SettingsError) -> (SourceConfiguration.Serial, DeviceMatch) {
        guard let device = try sourceTable.string("device"), !device.isEmpty else { throw sourceTable.error("device", "is required") }
        let baud = try sourceTable.int("baud") ?? 9600
        guard [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200].contains(baud) else {
            throw sourceTable.error("baud", "must be one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200")
        }
        var serial = SourceConfiguration.Serial(device: resolve(device), baud: baud)
        var hotplug = DeviceMatch.serialPath(serial.device)
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
            hotplug = .usb(vendor: vendor, product: product, serial: try usb.string("serial"))
            serial.followsDevnode = true
        }
        return (serial, hotplug)
    }
}
