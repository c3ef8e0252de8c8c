/// Which device is the mech: a serial device by path (a `/dev/serial/by-id/…` link or any
/// udev link) or by USB vendor, product and serial, or a GPIO chip by label.
public enum DeviceMatch: Sendable, Hashable {
    case serialPath(String)
    case usb(vendor: String, product: String, serial: String?)
    case gpioChip(label: String)

    public var subsystem: String {
        switch self {
        case .serialPath, .usb: "tty"
        case .gpioChip: "gpio"
        }
    }

    public func matches(_ event: DeviceEvent) -> Bool {
        guard event.subsystem == subsystem else { return false }
        switch self {
        case .serialPath(let path):
            return event.devnode == path || event.links.contains(path)
        case .usb(let vendor, let product, let serial):
            return event.properties["ID_VENDOR_ID"]?.lowercased() == vendor.lowercased()
                && event.properties["ID_MODEL_ID"]?.lowercased() == product.lowercased()
                && (serial == nil || event.properties["ID_SERIAL_SHORT"] == serial)
        case .gpioChip(let label):
            return event.label == label
        }
    }
}
