import Synchronization

/// Commands an operator asked for on the dashboard, waiting for the ingest's thread to publish
/// them on the cabinet's `cmd/<name>` (the link is the ingest's alone).
public final class CommandOutbox: Sendable {
    public struct Command: Sendable, Equatable {
        public var id: String
        public var cabinet: String
        public var site: String
        /// `inhibit`, `status`, `totals`, `reload`, `resend`.
        public var name: String
        /// The `args` object as JSON text.
        public var args: String
        public var by: String
        public init(id: String, cabinet: String, site: String, name: String, args: String, by: String) {
            self.id = id
            self.cabinet = cabinet
            self.site = site
            self.name = name
            self.args = args
            self.by = by
        }
    }

    private let queue = Mutex<[Command]>([])

    public init() {}

    public func send(_ command: Command) { queue.withLock { $0.append(command) } }

    func take() -> [Command] {
        queue.withLock { queued in
            defer { queued.removeAll() }
            return queued
        }
    }
}
