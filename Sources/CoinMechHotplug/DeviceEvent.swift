/// A device appearing or going away, as udev reports it (or a test feeds it).
public struct DeviceEvent: Sendable, Hashable {
    public enum Action: String, Sendable, Hashable { case add, remove, change, bind, unbind }

    public var action: Action
    public var subsystem: String
    /// `/dev/ttyUSB0`, `/dev/gpiochip0`; nil for devices without a node.
    public var devnode: String?
    /// udev properties: `ID_VENDOR_ID`, `ID_MODEL_ID`, `ID_SERIAL_SHORT`, `DEVLINKS`, …
    public var properties: [String: String]
    /// For GPIO chips: the chip's label (sysfs attribute `label`).
    public var label: String?

    public init(action: Action, subsystem: String, devnode: String?, properties: [String: String] = [:], label: String? = nil) {
        self.action = action
        self.subsystem = subsystem
        self.devnode = devnode
        self.properties = properties
        self.label = label
    }

    /// Symlinks udev made for the device (`/dev/serial/by-id/…`, `/dev/coinmech0`).
    public var links: [String] { (properties["DEVLINKS"] ?? "").split(separator: " ").map(String.init) }
}

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

/// What the source should do about a device event: the logic above the udev seam, pure.
public struct HotplugTracker: Sendable {
    public enum Change: Sendable, Hashable {
        /// The mech's device is there (again): open `devnode`.
        case appeared(devnode: String)
        /// The mech's device went away: close it, record `source_lost`.
        case vanished(devnode: String)
    }

    public let match: DeviceMatch
    /// The device node in use, while present.
    public private(set) var present: String?

    public init(match: DeviceMatch) { self.match = match }

    /// Feeds one event (from enumeration at start, then from the monitor).
    public mutating func handle(_ event: DeviceEvent) -> Change? {
        guard event.subsystem == match.subsystem, let node = event.devnode else { return nil }
        switch event.action {
        case .add, .change, .bind:
            guard match.matches(event), present != node else { return nil }
            present = node
            return .appeared(devnode: node)
        case .remove, .unbind:
            // A device that is gone cannot be asked for its attributes (a GPIO chip's label):
            // the one in use is known by its node.
            guard present == node else { return nil }
            present = nil
            return .vanished(devnode: node)
        }
    }
}
