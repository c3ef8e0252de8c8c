import CoinMechModel

/// `events`: recorded events after a seq, oldest first, and the ledger's last seq.
public struct EventsReply: OperatorReply {
    public var events: [LedgerEvent]
    public var lastSeq: Int64

    public init(events: [LedgerEvent], lastSeq: Int64) {
        self.events = events
        self.lastSeq = lastSeq
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "events")
        var events: [LedgerEvent] = []
        for event in try f.array("events") { events.append(try LedgerEvent(json: event)) }
        self.init(events: events, lastSeq: try f.int("last_seq"))
    }

    public var json: JSON { ["events": .array(events.map(\.json)), "last_seq": .int(lastSeq)] }
}

/// `subscribe`: from which seq the events will come (the ledger's last when the client named
/// none), the ledger's last seq, and whether accepted coins come before the mech confirms them.
public struct SubscribeReply: OperatorReply {
    public var since: Int64
    public var seq: Int64
    public var pending: Bool

    public init(since: Int64, seq: Int64, pending: Bool) {
        self.since = since
        self.seq = seq
        self.pending = pending
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "subscribe")
        self.init(since: try f.int("since"), seq: try f.int("seq"), pending: try f.bool("pending"))
    }

    public var json: JSON { ["since": .int(since), "seq": .int(seq), "pending": .bool(pending)] }
}
