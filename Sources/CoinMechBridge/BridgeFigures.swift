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
    /// The customer's credit moved, by kind (`credit_spent`: sales, `credit_refunded`,
    /// `credit_returned`: escrow returns, `credit_expired`) and currency: moves and minor units.
    public var creditMoves: [Pair: Tally] = [:]
    public var countedThrough: Int64 = 0

    public struct Tally: Sendable, Equatable {
        public var count = 0
        public var minor: Int64 = 0
        public init(count: Int = 0, minor: Int64 = 0) {
            self.count = count
            self.minor = minor
        }
    }

    /// The credit's moves counted, with their series' names (docs/FLEET.md, "Metrics").
    public static let creditKinds: [(kind: String, series: String, what: String)] = [
        ("credit_spent", "sales", "Sales approved (credit_spent)"), ("credit_refunded", "refunds", "Sales put back (credit_refunded)"),
        ("credit_returned", "returns", "Credit paid back as change: escrow returns (credit_returned)"),
        ("credit_expired", "expiries", "Credit expired (credit_expired)"),
    ]

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
        } else if Self.creditKinds.contains(where: { $0.kind == kind }) {
            let key = Pair(kind, event["currency"]?.string ?? "?")
            creditMoves[key, default: .init()].count += 1
            // A move's amount is above 0 and at most 100000 on the daemon; anything else counts 0.
            let value = event["value_minor"]?.int ?? 0
            creditMoves[key, default: .init()].minor += (0...Int64(1) << 40).contains(value) ? value : 0
        }
    }
}
