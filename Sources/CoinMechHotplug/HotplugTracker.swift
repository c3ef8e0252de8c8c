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
