import CoinMechProtocol
import Prometheus

/// `/metrics` in Prometheus's text format, made from the daemon's last answers and the bridge's
/// own figures (docs/FLEET.md, "Metrics"): made once per status poll, served as it is, so a
/// scrape never waits on the daemon.
///
/// Each snapshot is a new swift-prometheus registry: the daemon's counters are totals it keeps
/// (a restart of the daemon starts them again, which Prometheus reads as a counter reset), so
/// each is its own value, not a sum the bridge kept.
public enum BridgeMetrics {
    /// What the daemon answered at the last poll; nil where it did not.
    public struct Daemon: Sendable {
        public var status: JSON?
        public var totals: JSON?
        public var chain: JSON?
        public var teaching: Bool?
        /// Nothing makes the cabinet return coins (`status`'s `inhibited_by` is empty).
        public var accepting: Bool?
        public init(status: JSON? = nil, totals: JSON? = nil, chain: JSON? = nil, teaching: Bool? = nil, accepting: Bool? = nil) {
            self.status = status
            self.totals = totals
            self.chain = chain
            self.teaching = teaching
            self.accepting = accepting
        }
    }

    /// Where delivery stands: what `status` carries.
    public typealias Delivery = BridgeStatus.Delivery

    public static let guarantees = ["end_to_end", "waiting_for_ack", "at_most_once", "ledger_behind"]
    public static let linkStates = ["ok", "restarting", "hung", "quarantined"]
    /// `status.counters`, exported as `coinmech_<name>_total`.
    public static let counters = ["readings": "readings", "accepted": "accepted", "credited": "credited",
                                  "returned_after_accept": "returned_after_accept", "unconfirmed": "unconfirmed", "rejected": "rejected",
                                  "duplicates": "duplicates", "protocol_errors": "protocol_errors", "deadline_passed": "deadline_passed",
                                  "late_answers": "late_answers", "queries": "mech_queries", "connects": "source_connects",
                                  "reconnects": "source_reconnects"]

    public static func render(cabinet: String, site: String, bridgeVersion: String, daemon: Daemon, figures: BridgeFigures,
                              delivery: Delivery) -> [UInt8] {
        let r = PrometheusCollectorRegistry()
        func gauge(_ name: String, _ value: Double, _ labels: [(String, String)] = [], help: String) {
            r.makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels).set(value)
        }
        func counter(_ name: String, _ value: Double, _ labels: [(String, String)] = [], help: String) {
            let made = r.makeCounter(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
            if value > 0 { made.increment(by: value) }
        }
        func flag(_ on: Bool) -> Double { on ? 1 : 0 }
        let status = daemon.status
        let hello = status?["version"]?.string ?? ""
        gauge("coinmech_bridge_info", 1, [("cabinet", cabinet), ("site", site), ("bridge_version", bridgeVersion), ("daemon_version", hello),
                                          ("daemon_protocol", status?["protocol"].map { "\($0)" } ?? "")],
              help: "This cabinet and the versions it runs (join on instance)")
        gauge("coinmech_up", flag(status != nil), help: "The last poll of the daemon answered")
        if let status {
            gauge("coinmech_inhibited", flag(status["inhibited"]?.bool == true), help: "The operator inhibited the mech")
            gauge("coinmech_plugin_inhibit", flag(status["plugin_inhibit"]?.string != nil), help: "A link keeps the mech inhibited")
            gauge("coinmech_ledger_failing", flag(status["ledger"]?.string == "failing"), help: "The ledger cannot be written")
            if let accepting = daemon.accepting {
                gauge("coinmech_accepting", flag(accepting), help: "Nothing makes the cabinet return coins (the bridge's status: inhibited_by empty)")
            }
            if let source = status["source"] {
                gauge("coinmech_source_connected", flag(source["state"]?.string == "connected"),
                      [("source", source["name"]?.string ?? source["kind"]?.string ?? "source"), ("kind", source["kind"]?.string ?? "")],
                      help: "The mech's line is open")
            }
            if let acceptor = status["acceptor"], acceptor != .null {
                gauge("coinmech_acceptor_fault", flag((acceptor["fault"] ?? .null) != .null), help: "The acceptor reports a fault")
                gauge("coinmech_acceptor_responding", flag(acceptor["responding"]?.bool ?? true), help: "The acceptor answers")
                gauge("coinmech_acceptor_lost_events", Double(acceptor["lost_events"]?.int ?? 0), help: "Buffer events the acceptor lost since the last collection")
            }
            for (name, exported) in counters {
                counter("coinmech_\(exported)_total", Double(status["counters"]?[name]?.int ?? 0), help: "status.counters.\(name), since the daemon started")
            }
            gauge("coinmech_chain_generation", Double(status["chain_generation"]?.int ?? 0), help: "The chain generation deciding")
            gauge("coinmech_ledger_last_seq", Double(status["last_seq"]?.int ?? 0), help: "The ledger's last seq")
            gauge("coinmech_daemon_heartbeat_age_seconds", Double(status["heartbeat_age_ms"]?.int ?? 0) / 1000, help: "Since the deciding loop last beat")
            gauge("coinmech_daemon_uptime_seconds", status["uptime_s"]?.double ?? 0, help: "Since the daemon started")
            if let bytes = status["ledger_bytes"]?.int { gauge("coinmech_ledger_bytes", Double(bytes), help: "The ledger's files (database and WAL)") }
            gauge("coinmech_bridge_lag_events", Double(max((status["last_seq"]?.int ?? 0) - delivery.ackedSeq, 0)), help: "Ledger events the fleet has not acked")
            for entry in status["plugin_errors"]?.array ?? [] {
                counter("coinmech_link_plugin_errors_total", Double(entry["count"]?.int ?? 0), [("link", entry["link"]?.string ?? "?")], help: "Plugin errors per link")
            }
            for entry in status["plugin_lies"]?.array ?? [] {
                counter("coinmech_link_lies_total", Double(entry["count"]?.int ?? 0), [("link", entry["link"]?.string ?? "?")], help: "Plausible lies caught per link")
            }
        }
        if let teaching = daemon.teaching { gauge("coinmech_teaching", flag(teaching), help: "Teach mode: every coin is returned") }
        if let chain = daemon.chain {
            for link in chain["links"]?.array ?? [] {
                let name = link["name"]?.string ?? "?"
                let state = link["state"]?.string ?? "ok"
                for each in linkStates { gauge("coinmech_link_state", flag(each == state), [("link", name), ("state", each)], help: "One series per state, 1 for the link's") }
                let stats = link["statistics"]
                for key in ["calls", "accepts", "rejects", "passes"] {
                    counter("coinmech_link_\(key)_total", Double(stats?[key]?.int ?? 0), [("link", name)], help: "The link's \(key)")
                }
                counter("coinmech_link_sampled_calls_total", Double(stats?["sampled_calls"]?.int ?? 0), [("link", name)], help: "Calls timed (one walk in 64)")
                // A gauge: the daemon keeps a mean, and calls × a rounded mean is no counter (it can go down).
                gauge("coinmech_link_mean_call_seconds", Double(stats?["mean_ns"]?.int ?? 0) / 1e9, [("link", name)],
                      help: "Mean time of the link's timed calls since the chain was loaded")
            }
        }
        if let totals = daemon.totals {
            for row in totals["lifetime"]?.array ?? [] {
                counter("coinmech_coins_credited_total", Double(row["count"]?.int ?? 0), denomination(row), help: "Coins credited since the ledger began")
            }
            for (currency, value) in totals["lifetime_value"]?.object ?? [:] {
                counter("coinmech_credited_value_minor_total", Double(value.int ?? 0), [("currency", currency)], help: "Value credited since the ledger began, minor units")
            }
            var weight = 0.0
            for row in totals["current"]?.array ?? [] {
                gauge("coinmech_cash_box_coins", Double(row["count"]?.int ?? 0), denomination(row), help: "Coins in the cash box since the last collection")
                weight += row["weight_g"]?.double ?? 0
            }
            for (currency, value) in totals["current_value"]?.object ?? [:] {
                gauge("coinmech_cash_box_value_minor", Double(value.int ?? 0), [("currency", currency)], help: "Value in the cash box, minor units")
            }
            gauge("coinmech_cash_box_weight_grams", weight, help: "Weight of the coins in the cash box")
            for row in totals["pending"]?.array ?? [] {
                gauge("coinmech_pending_coins", Double(row["count"]?.int ?? 0), denomination(row), help: "Accepted, waiting for the mech's word")
            }
            for row in totals["unconfirmed"]?.array ?? [] {
                gauge("coinmech_unconfirmed_coins", Double(row["count"]?.int ?? 0), denomination(row), help: "Unconfirmed since the last collection: not credit")
            }
        }
        for (pair, count) in figures.returned {
            counter("coinmech_coins_returned_total", Double(count), [("currency", pair.first), ("denomination", pair.second)], help: "coin_returned events read by this bridge")
        }
        // The customer's credit: the balance as the daemon holds it (status.credit, summed over
        // accounts per currency), and the moves this bridge read, with every currency the
        // daemon holds credit in present (0) so that a query finds them before the first sale.
        var balances: [String: Int64] = [:]
        for account in status?["credit"]?.array ?? [] {
            balances[account["currency"]?.string ?? "?", default: 0] += account["balance_minor"]?.int ?? 0
        }
        for (currency, balance) in balances {
            gauge("coinmech_credit_balance_minor", Double(balance), [("currency", currency)], help: "The customer's credit the daemon holds, minor units (status.credit)")
        }
        let creditCurrencies = Set(balances.keys).union(figures.creditMoves.keys.map(\.second))
        for (kind, series, what) in BridgeFigures.creditKinds {
            for currency in creditCurrencies.sorted() {
                let tally = figures.creditMoves[.init(kind, currency)] ?? .init()
                counter("coinmech_credit_\(series)_total", Double(tally.count), [("currency", currency)], help: "\(what) events read by this bridge")
                counter("coinmech_credit_\(series)_value_minor_total", Double(tally.minor), [("currency", currency)],
                        help: "\(what): their value_minor, read by this bridge")
            }
        }
        for (pair, count) in figures.rejects {
            counter("coinmech_rejects_total", Double(count), [("link", pair.first), ("reason", pair.second)], help: "Rejected decisions read by this bridge")
        }
        gauge("coinmech_bridge_broker_connected", flag(figures.brokerConnected), help: "The bridge is connected to the broker")
        gauge("coinmech_bridge_daemon_connected", flag(figures.daemonConnected), help: "The bridge's subscription to the daemon is open")
        for each in guarantees {
            gauge("coinmech_bridge_delivery", flag(each == delivery.guarantee), [("guarantee", each)], help: "What delivery guarantees now, one series per value")
        }
        gauge("coinmech_bridge_acked_seq", Double(delivery.ackedSeq), help: "The cursor: the fleet's ack")
        gauge("coinmech_bridge_published_seq", Double(delivery.publishedSeq), help: "The highest seq published")
        gauge("coinmech_bridge_lag_seconds", delivery.lagSeconds, help: "Age of the oldest event not acked, 0 when none")
        gauge("coinmech_bridge_last_ack_timestamp_seconds", figures.lastAckTime, help: "When the cursor last moved")
        gauge("coinmech_bridge_inflight_messages", Double(figures.inFlight), help: "Messages awaiting the broker's PUBACK")
        counter("coinmech_bridge_events_published_total", Double(figures.eventsPublished), help: "Publishes on event, copies included")
        for cause in ["broker_reconnect", "ack_timeout", "resend"] {
            counter("coinmech_bridge_events_resent_total", Double(figures.eventsResent[cause] ?? 0), [("cause", cause)], help: "Copies of seqs published before")
        }
        for (pair, count) in figures.commands {
            counter("coinmech_bridge_commands_total", Double(count), [("cmd", pair.first), ("outcome", pair.second)], help: "Fleet commands answered")
        }
        counter("coinmech_bridge_broker_connects_total", Double(figures.brokerConnects), help: "Connections the broker accepted")
        counter("coinmech_bridge_daemon_connects_total", Double(figures.daemonConnects), help: "Subscriptions to the daemon opened")
        return r.emitToBuffer() + histogram(status?["decision_latency"])
    }

    /// `coinmech_decision_seconds` from the daemon's buckets, as Prometheus's histogram: the
    /// daemon counts into fixed buckets, so the text is written from them (a registry's histogram
    /// would need each value again).
    static func histogram(_ latency: JSON?) -> [UInt8] {
        guard let latency, let bounds = latency["bounds_us"]?.array?.compactMap(\.int), let counts = latency["counts"]?.array?.compactMap(\.int),
              counts.count == bounds.count + 1, !bounds.isEmpty else { return [] }
        var text = "# HELP coinmech_decision_seconds Decided coins: from the reading's arrival to the answer, since the daemon started\n"
        text += "# TYPE coinmech_decision_seconds histogram\n"
        var cumulative: Int64 = 0
        for (index, count) in counts.enumerated() {
            cumulative += count
            let le = index < bounds.count ? "\(Double(bounds[index]) / 1e6)" : "+Inf"
            text += "coinmech_decision_seconds_bucket{le=\"\(le)\"} \(cumulative)\n"
        }
        text += "coinmech_decision_seconds_sum \(Double(latency["sum_us"]?.int ?? 0) / 1e6)\n"
        text += "coinmech_decision_seconds_count \(cumulative)\n"
        return Array(text.utf8)
    }

    private static func denomination(_ row: JSON) -> [(String, String)] {
        [("currency", row["currency"]?.string ?? "?"), ("denomination", row["denomination"]?.string ?? "?")]
    }
}
