import Synchronization

/// Rung when a link's health changes (a crash, a quarantine, a hang), from whatever thread saw
/// it, so the deciding loop wakes and acts on it (inhibits the mech, records the event).
public final class PluginAlarm: Sendable {
    private let handler = Mutex<(@Sendable () -> Void)?>(nil)

    public init() {}

    /// What `raise()` calls; the deciding loop sets it to wake itself.
    public func onRaise(_ action: @escaping @Sendable () -> Void) {
        handler.withLock { $0 = action }
    }

    public func raise() {
        handler.withLock { $0 }?()
    }
}
