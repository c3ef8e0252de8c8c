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
