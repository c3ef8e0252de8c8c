/// The ingest's writers (docs/FLEET.md, "Ingest at the database's speed"). Every cabinet
/// belongs to one writer, by a stable hash of its id; a writer commits its batches one after
/// another, each on a connection of its own, and different writers commit at once. So a
/// cabinet's events keep their order (its next batch starts only once the last one is applied),
/// while the database works on several batches and the ingest reads the next messages meanwhile.
/// A pure value: which writer a cabinet has, each writer's queues, and which are in flight.
public struct WriterLanes: Sendable {
    public let count: Int
    private var queues: [CabinetQueues]
    private var busy: [Bool]

    public init(count: Int, perCabinet: Int = FleetLimits.cabinetQueue, perCabinetBytes: Int = FleetLimits.cabinetQueueBytes) {
        precondition(count >= 1, "at least one writer")
        self.count = count
        queues = Array(repeating: CabinetQueues(perCabinet: perCabinet, perCabinetBytes: perCabinetBytes), count: count)
        busy = Array(repeating: false, count: count)
    }

    /// The writer of `cabinet` among `count`: FNV-1a over its bytes, the same in every run
    /// (Swift's `Hasher` is seeded per process).
    public static func lane(of cabinet: String, among count: Int) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in cabinet.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return Int(hash % UInt64(count))
    }

    /// Queued behind the cabinet's others; false (shed) when its queue is full.
    public mutating func append(_ event: FleetMessage.Event) -> Bool {
        queues[Self.lane(of: event.cabinet, among: count)].append(event)
    }

    /// The events' JSON waiting, in bytes, over every writer.
    public var bytes: Int { queues.reduce(0) { $0 + $1.bytes } }
    /// Events waiting, over every writer.
    public var waiting: Int { queues.reduce(0) { $0 + $1.count } }
    public var isEmpty: Bool { queues.allSatisfy(\.isEmpty) }
    /// Whether a batch is being committed.
    public var inFlight: Bool { busy.contains(true) }

    /// The next batch (up to `max` events, `CabinetQueues.batch`) of every writer that is idle
    /// and has events; each is then busy until `finished`.
    public mutating func start(max: Int) -> [(lane: Int, batch: [FleetMessage.Event])] {
        var started: [(lane: Int, batch: [FleetMessage.Event])] = []
        for lane in 0..<count where !busy[lane] && !queues[lane].isEmpty {
            let batch = queues[lane].batch(max: max)
            guard !batch.isEmpty else { continue }
            busy[lane] = true
            started.append((lane, batch))
        }
        return started
    }

    /// The writer's batch is committed and applied: its next may start.
    public mutating func finished(_ lane: Int) {
        precondition(busy[lane], "writer \(lane) had no batch in flight")
        busy[lane] = false
    }
}
