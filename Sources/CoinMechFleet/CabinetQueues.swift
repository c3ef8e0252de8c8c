/// Events waiting for the database, one queue per cabinet, batched in turn (docs/FLEET.md, "What
/// a cabinet cannot do to the fleet"). A pure value.
///
/// Each cabinet's events keep their order; a batch takes one event from each cabinet in turn, so
/// a cabinet that floods, or that holds a backlog of sparse seqs, costs the others one slot
/// each, never a place behind all of its events. A cabinet's queue holds at most `perCabinet`
/// events and `perCabinetBytes`: what comes beyond is shed. That is safe (the fleet acks only
/// what it committed, so the bridge sends a shed event again, B7 and F8) and it keeps taking
/// from the broker, so the others' events behind a flood are read at once.
public struct CabinetQueues: Sendable {
    public let perCabinet: Int
    public let perCabinetBytes: Int
    private var queues: [String: Queue] = [:]
    /// Cabinets with events, in the order they take their turns.
    private var turns: [String] = []
    private var nextTurn = 0
    public private(set) var count = 0
    /// The events' JSON, in bytes.
    public private(set) var bytes = 0

    private struct Queue: Sendable {
        var events: [FleetMessage.Event] = []
        var head = 0
        var bytes = 0
        var count: Int { events.count - head }
        var first: FleetMessage.Event? { head < events.count ? events[head] : nil }

        mutating func popFirst() -> FleetMessage.Event {
            let event = events[head]
            head += 1
            bytes -= event.json.utf8.count
            // Shifted once half is spent: each event moves O(1) times on average.
            if head > 64 && head * 2 > events.count {
                events.removeFirst(head)
                head = 0
            }
            return event
        }
    }

    /// An event's identity (F4), without a string built for it.
    private struct Identity: Hashable {
        var cabinet: String
        var seq: Int64
    }

    public init(perCabinet: Int = FleetLimits.cabinetQueue, perCabinetBytes: Int = FleetLimits.cabinetQueueBytes) {
        self.perCabinet = perCabinet
        self.perCabinetBytes = perCabinetBytes
    }

    public var isEmpty: Bool { count == 0 }

    /// Queued behind the cabinet's others; false (shed) when its queue is full.
    public mutating func append(_ event: FleetMessage.Event) -> Bool {
        let size = event.json.utf8.count
        let queued = queues[event.cabinet]?.count ?? 0
        guard queued < perCabinet, (queues[event.cabinet]?.bytes ?? 0) + size <= perCabinetBytes || queued == 0 else { return false }
        if queued == 0 { turns.append(event.cabinet) }
        // In place: a copy of the queue taken out and put back would copy its events each time.
        queues[event.cabinet, default: Queue()].events.append(event)
        queues[event.cabinet, default: Queue()].bytes += size
        count += 1
        bytes += size
        return true
    }

    /// Up to `max` events, one from each cabinet in turn, each cabinet's in order. A second
    /// copy of an identity already in the batch ends its cabinet's part: it goes in the next
    /// batch, where the store compares it with the first (F5).
    public mutating func batch(max: Int) -> [FleetMessage.Event] {
        var batch: [FleetMessage.Event] = []
        var inBatch = Set<Identity>()
        var done = Set<String>()
        while batch.count < max, done.count < turns.count {
            if nextTurn >= turns.count { nextTurn = 0 }
            let cabinet = turns[nextTurn]
            guard !done.contains(cabinet), let head = queues[cabinet]?.first else {
                done.insert(cabinet)
                nextTurn += 1
                continue
            }
            guard inBatch.insert(Identity(cabinet: cabinet, seq: head.seq)).inserted else {
                done.insert(cabinet)
                nextTurn += 1
                continue
            }
            _ = queues[cabinet]?.popFirst()
            batch.append(head)
            count -= 1
            bytes -= head.json.utf8.count
            nextTurn += 1
        }
        // Cabinets whose queues are empty give up their turn.
        let emptied = Set(turns.filter { (queues[$0]?.count ?? 0) == 0 })
        if !emptied.isEmpty {
            let before = turns[..<min(nextTurn, turns.count)].filter { emptied.contains($0) }.count
            turns.removeAll { emptied.contains($0) }
            for cabinet in emptied { queues[cabinet] = nil }
            nextTurn -= before
        }
        return batch
    }
}
