/// Which ledger events the bridge publishes next, with no I/O (docs/FLEET.md, "Delivery"):
/// seqs in order from where the consumer's ack stands, at most `window` beyond it and
/// `maxInflight` awaiting PUBACK; everything after the cursor again after a broker reconnect
/// or when no ack has come for `ackTimeout` (doubling up to 10 minutes while none comes).
///
/// The cursor is the consumer's word that it stored every seq up to it (B8): it never goes
/// down. With acks off (B10) it follows PUBACK instead, in order.
public struct BridgeDelivery: Sendable {
    public let window: Int
    public let maxInflight: Int
    public let acksRequired: Bool
    public let ackTimeout: Double
    /// The highest seq the consumer acked (or, acks off, PUBACKed with all before it).
    public private(set) var cursor: Int64
    /// The highest seq published since the stream last started.
    public private(set) var published: Int64
    /// Where the daemon subscription must start again from (`since`), when it must.
    public private(set) var subscribeFrom: Int64?
    /// Rewinds without progress since the cursor last moved (B7's back-off).
    public private(set) var rewinds = 0
    /// Every publish on `event` of the live stream, copies included, and the copies of seqs
    /// published before, by the rewind that sent them again (`broker_reconnect`, `ack_timeout`).
    public private(set) var copiesSent = 0
    public private(set) var resent: [String: Int] = [:]
    private var highestSent: Int64 = 0
    private var rewindCause = "broker_reconnect"
    private var inFlight: [Int32: Int64] = [:]
    private var pubacked: Set<Int64> = []
    private var lastProgress: Double

    public static let maximumAckWait = 600.0

    public init(cursor: Int64, window: Int, maxInflight: Int, acksRequired: Bool, ackTimeout: Double, now: Double) {
        self.cursor = cursor
        self.window = window
        self.maxInflight = maxInflight
        self.acksRequired = acksRequired
        self.ackTimeout = ackTimeout
        published = cursor
        subscribeFrom = cursor
        lastProgress = now
    }

    /// Room to publish one more (B6): within the window and the in-flight limit.
    public var canPublish: Bool { published - cursor < Int64(window) && inFlight.count < maxInflight }
    /// Stopped at the window for want of an ack.
    public var waitingForAck: Bool { published - cursor >= Int64(window) }
    public var inFlightCount: Int { inFlight.count }

    public enum Take: Sendable, Equatable {
        case publish
        /// Published already in this stream.
        case duplicate
        /// Seqs missing before it (B4): read them first.
        case gap(from: Int64, to: Int64)
    }

    /// The daemon's next event: publish it, or why not. The first one unacked starts the
    /// wait for an ack (B7): a quiet spell before it is no reason to resend.
    public mutating func take(_ seq: Int64, now: Double) -> Take {
        if seq <= published { return .duplicate }
        if seq != published + 1 { return .gap(from: published + 1, to: seq - 1) }
        if published == cursor { lastProgress = now }
        published = seq
        return .publish
    }

    /// Seqs up to `seq` that the ledger does not have (B4's read found none): stepped past,
    /// never published. The consumer sees the hole and asks; the bridge's reply names them.
    public mutating func skip(through seq: Int64) {
        guard seq > published else { return }
        if published == cursor && !acksRequired { cursor = seq }
        published = seq
    }

    /// `seq` was handed to the broker as message `mid`.
    public mutating func sent(_ seq: Int64, mid: Int32) {
        inFlight[mid] = seq
        copiesSent += 1
        if seq <= highestSent { resent[rewindCause, default: 0] += 1 }
        highestSent = max(highestSent, seq)
    }

    /// The broker PUBACKed `mid`.
    public mutating func puback(_ mid: Int32, now: Double) {
        guard let seq = inFlight.removeValue(forKey: mid), !acksRequired else { return }
        pubacked.insert(seq)
        var moved = false
        while pubacked.remove(cursor + 1) != nil {
            cursor += 1
            moved = true
        }
        if moved { progress(now) }
    }

    /// The consumer acked `seq`: true if the cursor moved. A lower or equal ack is ignored; one
    /// beyond what this stream published means another run got further: go on from it.
    @discardableResult
    public mutating func acked(_ seq: Int64, now: Double) -> Bool {
        guard acksRequired, seq > cursor else { return false }
        cursor = seq
        progress(now)
        if seq > published {
            published = seq
            subscribeFrom = seq
        }
        return true
    }

    /// Connected (again) to the broker: it may have lost what it PUBACKed, so everything after
    /// the cursor goes again (B5), and the wait for an ack starts afresh.
    public mutating func brokerConnected(now: Double) {
        rewinds = 0
        rewindCause = "broker_reconnect"
        rewind(now)
    }

    /// The daemon's connection ended (a restart, an overflow): nothing was lost on the broker's
    /// side, so the stream goes on after the last seq published.
    public mutating func daemonLost() {
        subscribeFrom = published
    }

    /// The subscription asked for is in place.
    public mutating func subscribed() { subscribeFrom = nil }

    /// Events are unacked and no ack has come for `ackTimeout`: `status` says `waiting_for_ack`.
    public func waitingForAck(now: Double) -> Bool { acksRequired && published > cursor && now - lastProgress >= ackTimeout }

    /// B7: events unacked and no ack for the wait: everything after the cursor again (true
    /// when it rewound). Called only while connected to the broker.
    @discardableResult
    public mutating func tick(now: Double) -> Bool {
        guard acksRequired, published > cursor, now - lastProgress >= ackWait else { return false }
        rewinds += 1
        rewindCause = "ack_timeout"
        rewind(now)
        return true
    }

    /// The wait before the next rewind: `ackTimeout`, doubled per rewind without progress.
    public var ackWait: Double { min(ackTimeout * Double(1 << min(rewinds, 20)), Self.maximumAckWait) }

    private mutating func rewind(_ now: Double) {
        published = cursor
        inFlight.removeAll()
        pubacked.removeAll()
        subscribeFrom = cursor
        lastProgress = now
    }

    private mutating func progress(_ now: Double) {
        lastProgress = now
        rewinds = 0
    }
}
