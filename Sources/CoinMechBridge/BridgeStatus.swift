import CoinMechProtocol

/// The `status` and `totals` payloads (docs/FLEET.md), built from the daemon's replies with no
/// I/O: what an operator needs at a glance (can this cabinet take coins, and if not, why), and
/// the daemon's totals as they are.
public enum BridgeStatus {
    /// Where delivery stands, the bridge's own part of `status`.
    public struct Delivery: Sendable, Equatable {
        public var guarantee: String
        public var ackedSeq: Int64
        public var publishedSeq: Int64
        /// Age of the oldest unacked event, 0 when none.
        public var lagSeconds: Double

        public init(guarantee: String, ackedSeq: Int64, publishedSeq: Int64, lagSeconds: Double) {
            self.guarantee = guarantee
            self.ackedSeq = ackedSeq
            self.publishedSeq = publishedSeq
            self.lagSeconds = lagSeconds
        }
    }

    /// The fields that change with every coin or tick: they alone never make a new `status` (B2).
    static let volatile: Set<String> = ["time", "pending", "last_seq"]
    static let volatileDelivery: Set<String> = ["acked_seq", "published_seq", "lag_events", "lag_s"]

    /// `status` from the daemon's `status` reply (nil: unreachable, `unreachable` says why),
    /// whether it is teaching, its unconfirmed coins, and delivery.
    public static func payload(cabinet: String, site: String, daemon status: JSON?, unreachable: String?, teaching: Bool, unconfirmed: Int64,
                               delivery: Delivery, now: Double) -> JSON {
        var payload: [String: JSON] = ["v": 1, "cabinet": .string(cabinet), "site": .string(site), "time": .double((now * 10).rounded() / 10)]
        let lastSeq = status?["last_seq"]?.int
        payload["delivery"] = [
            "guarantee": .string(delivery.guarantee), "acked_seq": .int(delivery.ackedSeq), "published_seq": .int(delivery.publishedSeq),
            "lag_events": lastSeq.map { .int(max($0 - delivery.ackedSeq, 0)) } ?? .null, "lag_s": .double((delivery.lagSeconds * 10).rounded() / 10),
        ]
        guard let status else {
            payload["daemon"] = "unreachable"
            payload["daemon_reason"] = .string(unreachable ?? "not reached yet")
            payload["inhibited_by"] = ["daemon"]
            return .object(payload)
        }
        payload["daemon"] = "connected"
        var inhibitedBy: [JSON] = []
        let inhibited = status["inhibited"]?.bool ?? false
        if inhibited { inhibitedBy.append("operator") }
        if let reason = status["plugin_inhibit"], reason != .null { inhibitedBy.append("plugin") }
        if status["ledger"]?.string == "failing" { inhibitedBy.append("ledger") }
        if teaching { inhibitedBy.append("teaching") }
        if status["source"]?["state"]?.string == "disconnected" { inhibitedBy.append("source") }
        let acceptor = status["acceptor"]
        if let acceptor, acceptor != .null, acceptor["fault"].map({ $0 != .null }) == true || acceptor["accepting"]?.bool == false {
            inhibitedBy.append("acceptor")
        }
        payload["inhibited_by"] = .array(inhibitedBy)
        payload["inhibited"] = .bool(inhibited)
        payload["plugin_inhibit"] = status["plugin_inhibit"] ?? .null
        payload["ledger"] = status["ledger"] ?? "ok"
        payload["source"] = status["source"] ?? .null
        payload["link_problems"] = status["link_problems"] ?? []
        payload["plugin_errors"] = status["plugin_errors"] ?? []
        payload["plugin_lies"] = status["plugin_lies"] ?? []
        if let acceptor, acceptor != .null {
            var part: [String: JSON] = [:]
            for key in ["kind", "responding", "accepting", "fault", "lost_events", "lost_replies", "alarm", "held_for_ledger", "held_for_payout"] {
                if let value = acceptor[key] { part[key] = value }
            }
            payload["acceptor"] = .object(part)
        } else {
            payload["acceptor"] = .null
        }
        payload["pending"] = status["pending"] ?? 0
        payload["unconfirmed"] = .int(unconfirmed)
        payload["chain_generation"] = status["chain_generation"] ?? .null
        payload["daemon_version"] = status["version"] ?? .null
        payload["last_seq"] = lastSeq.map(JSON.int) ?? .null
        // The customer's credit as the daemon holds it: not volatile, a balance is news (a coin
        // changes it too, so while coins come in a status goes out at most once per poll).
        payload["credit"] = status["credit"] ?? []
        return .object(payload)
    }

    /// `payload` without its volatile fields: a new `status` goes out when this changes.
    public static func stable(_ payload: JSON) -> JSON {
        guard var object = payload.object else { return payload }
        for key in volatile { object.removeValue(forKey: key) }
        if var delivery = object["delivery"]?.object {
            for key in volatileDelivery { delivery.removeValue(forKey: key) }
            object["delivery"] = .object(delivery)
        }
        return .object(object)
    }

    /// The number of unconfirmed coins in a `totals` reply.
    public static func unconfirmed(_ totals: JSON) -> Int64 {
        (totals["unconfirmed"]?.array ?? []).reduce(0) { $0 + ($1["count"]?.int ?? 0) }
    }

    /// `totals`: the daemon's reply, unchanged, with the seq it covers at least.
    public static func totals(cabinet: String, site: String, totals: JSON, asOfSeq: Int64, now: Double) -> JSON {
        ["v": 1, "cabinet": .string(cabinet), "site": .string(site), "time": .double((now * 10).rounded() / 10), "as_of_seq": .int(asOfSeq),
         "totals": totals]
    }

    /// Event kinds after which `status` is read again at once.
    public static let statusEvents: Set<String> = [
        "inhibit", "reload", "reload_failed", "quarantined", "quarantine_lifted", "ledger_recovered", "source_connected", "source_lost",
        "acceptor_fault", "acceptor_fault_cleared", "teach_start", "teach_commit", "teach_abort", "collect", "coin_unconfirmed",
        "credit_opened", "credit_spent", "credit_refunded", "credit_returned", "credit_expired",
    ]
    /// Event kinds after which `totals` is read again (at most once a second).
    public static let totalsEvents: Set<String> = ["coin", "coin_unconfirmed", "coin_returned", "collect"]
}
