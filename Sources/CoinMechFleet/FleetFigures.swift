import Synchronization

/// The ingest's own counters, for `/metrics`: written by the ingest, read by the dashboard.
public final class FleetFigures: Sendable {
    public struct Snapshot: Sendable, Equatable {
        public var brokerConnected = false
        public var databaseUp = false
        public var eventsStored = 0
        public var duplicates = 0
        public var batches = 0
        public var refused = 0
        /// Refused messages by `FleetMessage.Refusal.Kind`.
        public var refusedByKind: [String: Int] = [:]
        /// The MQTT link reads from the broker (false: its inbox is full).
        public var inboxReading = true
        /// Messages taken from the inbox, refused and shed ones included.
        public var messagesTaken = 0
        /// Database calls that passed their deadline, and those still stranded (`FleetDatabase`).
        public var databaseStalls = 0
        public var databaseStranded = 0
        public var conflicts = 0
        public var resendsAsked = 0
        public var acksSent = 0
        public var commandsSent = 0
        public var brokerConnects = 0
        /// Publish (the bridge's `published`) to commit, of the last batch, seconds.
        public var lastLagSeconds = 0.0
        public var commitSeconds = 0.0
        /// Per cabinet: the contiguous seq.
        public var contiguous: [String: Int64] = [:]
    }

    private let state = Mutex(Snapshot())

    public init() {}

    public func update(_ change: (inout Snapshot) -> Void) { state.withLock { change(&$0) } }

    public var snapshot: Snapshot { state.withLock { $0 } }
}
