import CoinMechProtocol

/// The bridge's own counts since it started, for `/metrics` (docs/FLEET.md, "Metrics").
public struct BridgeFigures: Sendable, Equatable {
    public var brokerConnected = false
    public var daemonConnected = false
    public var brokerConnects = 0
    public var daemonConnects = 0
    /// Every publish on `event`, copies included.
    public var eventsPublished = 0
    /// Copies of seqs published before, by why: `broker_reconnect`, `ack_timeout`, `resend`.
    public var eventsResent: [String: Int] = [:]
    /// Fleet commands answered, by command and outcome (`ok` or the error code).
    public var commands: [Pair: Int] = [:]
    /// When the cursor last moved (seconds since 1970), 0 before it did.
    public var lastAckTime = 0.0
    public var inFlight = 0
    /// `coin_returned` events read, by currency and denomination; rejected decisions by link and
    /// reason. Each seq is counted once per run: `countedThrough` is the highest counted.
    public var returned: [Pair: Int] = [:]
    public var rejects: [Pair: Int] = [:]
    public var countedThrough: Int64 = 0

    public struct Pair: Sendable, Hashable {
        public var first: String
        public var second: String
        public init(_ first: String, _ second: String) {
            self.first = first
            self.second = second
        }
    }

    public init() {}

    /// An event about to be published: returns and rejections counted, each seq once per run
    /// (a rewind publishes it again). Seqs come in order here, holes read first.
    public mutating func count(_ event: JSON) {
        guard let seq = event["seq"]?.int, seq > countedThrough, let kind = event["kind"]?.string else { return }
        countedThrough = seq
        if kind == "coin_returned" {
            returned[.init(event["currency"]?.string ?? "?", event["denomination"]?.string ?? "?"), default: 0] += 1
        } else if kind == "decision", event["verdict"]?.string == "reject" {
            rejects[.init(event["link"]?.string ?? "terminal", event["reason"]?.string ?? "?"), default: 0] += 1
        }
    }
}
