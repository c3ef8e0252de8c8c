import CGPIOD
import CUdev

#if canImport(Glibc)
import Glibc
#endif

/// Why udev could not be watched.
public struct UdevError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { "udev: \(message)" }
}

/// libudev, the thin seam: a netlink monitor for one subsystem, set up and receiving
/// *before* the existing devices are enumerated, so nothing is missed in between. Owned by
/// one thread.
public final class UdevMonitor {
    private let udev: OpaquePointer
    private let monitor: OpaquePointer
    public let subsystem: String

    public init(subsystem: String) throws(UdevError) {
        guard let udev = udev_new() else { throw UdevError(message: "udev_new failed") }
        guard let monitor = udev_monitor_new_from_netlink(udev, "udev") else {
            udev_unref(udev)
            throw UdevError(message: "cannot open the udev netlink monitor: \(String(cString: strerror(errno)))")
        }
        self.udev = udev
        self.monitor = monitor
        self.subsystem = subsystem
        udev_monitor_filter_add_match_subsystem_devtype(monitor, subsystem, nil)
        guard udev_monitor_enable_receiving(monitor) >= 0 else {
            throw UdevError(message: "cannot receive udev events: \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        udev_monitor_unref(monitor)
        udev_unref(udev)
    }

    /// Poll this for `POLLIN`, then call `receive()`.
    public var descriptor: Int32 { udev_monitor_get_fd(monitor) }

    /// The subsystem's devices present now, as `add` events. Call after `init` (the monitor is
    /// already receiving), so a device that comes or goes meanwhile is seen by one or the other.
    public func enumerate() -> [DeviceEvent] {
        guard let enumerator = udev_enumerate_new(udev) else { return [] }
        defer { udev_enumerate_unref(enumerator) }
        udev_enumerate_add_match_subsystem(enumerator, subsystem)
        udev_enumerate_scan_devices(enumerator)
        var events: [DeviceEvent] = []
        var entry = udev_enumerate_get_list_entry(enumerator)
        while let current = entry {
            if let path = udev_list_entry_get_name(current), let device = udev_device_new_from_syspath(udev, path) {
                events.append(Self.event(device, action: .add))
                udev_device_unref(device)
            }
            entry = udev_list_entry_get_next(current)
        }
        return events
    }

    /// The next event waiting on the monitor, if any.
    public func receive() -> DeviceEvent? {
        guard let device = udev_monitor_receive_device(monitor) else { return nil }
        defer { udev_device_unref(device) }
        let action = udev_device_get_action(device).map { String(cString: $0) } ?? "change"
        return Self.event(device, action: DeviceEvent.Action(rawValue: action) ?? .change)
    }

    static func event(_ device: OpaquePointer, action: DeviceEvent.Action) -> DeviceEvent {
        var properties: [String: String] = [:]
        var entry = udev_device_get_properties_list_entry(device)
        while let current = entry {
            if let name = udev_list_entry_get_name(current), let value = udev_list_entry_get_value(current) {
                properties[String(cString: name)] = String(cString: value)
            }
            entry = udev_list_entry_get_next(current)
        }
        let subsystem = udev_device_get_subsystem(device).map { String(cString: $0) } ?? ""
        let devnode = udev_device_get_devnode(device).map { String(cString: $0) }
        var label = udev_device_get_sysattr_value(device, "label").map { String(cString: $0) }
        // A GPIO chip's character device (/dev/gpiochipN, on the gpio bus) has no `label` in
        // sysfs; only the legacy sysfs class device (gpiochipBASE, without a node) has one. Ask
        // the chip itself, as libgpiod's lookup by label does. A removed chip cannot be asked:
        // HotplugTracker knows the chip in use by its node.
        if label == nil, subsystem == "gpio", action != .remove, let devnode { label = gpioChipLabel(devnode) }
        return DeviceEvent(action: action, subsystem: subsystem, devnode: devnode, properties: properties, label: label)
    }

    /// The label a GPIO chip reports through its character device, if it can be opened.
    static func gpioChipLabel(_ devnode: String) -> String? {
        guard let chip = gpiod_chip_open(devnode) else { return nil }
        defer { gpiod_chip_close(chip) }
        return gpiod_chip_label(chip).map { String(cString: $0) }
    }
}
