/// F6: a cabinet's ack after every commit that held any of its events (duplicates too), at most
/// one per cabinet per interval, the last always sent.
public struct AckPacer: Sendable, Equatable {
    public struct Ack: Sendable, Equatable {
        public var cabinet: String
        public var site: String
        public var seq: Int64
    }

    private var waiting: [String: Ack] = [:]
    private var lastSent: [String: Double] = [:]

    public init() {}

    /// A commit held events of `cabinet`; its ack says `seq`.
    public mutating func committed(cabinet: String, site: String, seq: Int64) {
        waiting[cabinet] = Ack(cabinet: cabinet, site: site, seq: seq)
    }

    /// An ack to send at once whatever the pace (the cabinet came online: F6).
    public mutating func now(cabinet: String, site: String, seq: Int64) {
        waiting[cabinet] = Ack(cabinet: cabinet, site: site, seq: seq)
        lastSent[cabinet] = nil
    }

    /// The acks due at `now`; those not yet due wait for their turn.
    public mutating func due(now: Double, interval: Double) -> [Ack] {
        var out: [Ack] = []
        for (cabinet, ack) in waiting where now - (lastSent[cabinet] ?? -.infinity) >= interval {
            out.append(ack)
            lastSent[cabinet] = now
        }
        for ack in out { waiting[ack.cabinet] = nil }
        return out.sorted { $0.cabinet < $1.cabinet }
    }

    /// An ack that could not be published (no connection): it waits for the next turn.
    public mutating func unsent(_ ack: Ack) {
        if waiting[ack.cabinet] == nil { waiting[ack.cabinet] = ack }
        lastSent[ack.cabinet] = nil
    }

    public var isEmpty: Bool { waiting.isEmpty }
}
