import PostgresNIO
import Prometheus

/// The fleet's `/metrics` (docs/FLEET.md, "The fleet service"): the ingest's counters, and the
/// open alerts and cabinets by state read from the database at the scrape. A new
/// swift-prometheus registry per scrape: every figure is read afresh.
///
/// A scrape answers within `databaseSeconds` whatever the database does: its figures are read
/// only while the ingest's last call found the database up, and are left out past the
/// deadline. A scrape that waited for them (a database call waits out `database.timeout_s`,
/// 15 s, for a database that is away) outlasted Prometheus' scrape timeout, so during an outage
/// the fleet looked down and `coinmech_fleet_database_up 0` was never seen.
public enum FleetMetrics {
    /// How long a scrape waits for the database's figures.
    public static let databaseSeconds = 2.0

    /// The credit's moves and their series' names, as the bridge names them (`coinmech_credit_…`).
    public static let creditSeries: [(kind: String, series: String, what: String)] = [
        ("credit_spent", "sales", "Sales (credit_spent)"), ("credit_refunded", "refunds", "Sales put back (credit_refunded)"),
        ("credit_returned", "returns", "Escrow returns: credit paid back as change (credit_returned)"), ("credit_expired", "expiries", "Credit expired (credit_expired)"),
    ]

    public static func text(store: FleetStore, figures: FleetFigures.Snapshot, instance: String, now: Double,
                            databaseSeconds: Double = databaseSeconds) async throws -> String {
        let r = PrometheusCollectorRegistry()
        func gauge(_ name: String, _ value: Double, _ labels: [(String, String)] = [], help: String) {
            r.makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels).set(value)
        }
        func counter(_ name: String, _ value: Int, help: String) {
            let made = r.makeCounter(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: [])
            if value > 0 { made.increment(by: Double(value)) }
        }
        func labeledCounter(_ name: String, _ value: Int64, _ labels: [(String, String)], help: String) {
            let made = r.makeCounter(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
            if value > 0 { made.increment(by: Double(value)) }
        }
        gauge("coinmech_fleet_info", 1, [("instance_name", instance)], help: "This fleet instance")
        gauge("coinmech_fleet_broker_connected", figures.brokerConnected ? 1 : 0, help: "The persistent session is connected")
        gauge("coinmech_fleet_database_up", figures.databaseUp ? 1 : 0, help: "The last database write or read succeeded")
        counter("coinmech_fleet_events_stored_total", figures.eventsStored, help: "Events stored (first copies)")
        counter("coinmech_fleet_duplicates_total", figures.duplicates, help: "Copies dropped by the key (cabinet, seq)")
        counter("coinmech_fleet_batches_total", figures.batches, help: "Transactions of events committed")
        for kind in FleetMessage.Refusal.Kind.allCases {
            let made = r.makeCounter(descriptor: MetricNameDescriptor(metricName: "coinmech_fleet_refused_total", unitName: "",
                                                                      helpText: "Messages refused, by kind: not stored (docs/FLEET.md, F1, F3, the fleet's bounds)"),
                                     labels: [("kind", kind.rawValue)])
            if let count = figures.refusedByKind[kind.rawValue], count > 0 { made.increment(by: Double(count)) }
        }
        counter("coinmech_fleet_messages_taken_total", figures.messagesTaken, help: "Messages the ingest took from its inbox, refused and shed ones included")
        gauge("coinmech_fleet_inbox_reading", figures.inboxReading ? 1 : 0, help: "The link reads from the broker (0: its inbox is full, the database slow or away)")
        counter("coinmech_fleet_database_stalls_total", figures.databaseStalls, help: "Database calls that passed database.timeout_s")
        gauge("coinmech_fleet_database_stranded", Double(figures.databaseStranded), help: "Calls given up at their deadline and never answered")
        counter("coinmech_fleet_conflicts_total", figures.conflicts, help: "Copies unlike the stored event (F5)")
        counter("coinmech_fleet_resends_asked_total", figures.resendsAsked, help: "cmd/resend sent for a gap (F8)")
        counter("coinmech_fleet_acks_sent_total", figures.acksSent, help: "Acks published (F6)")
        counter("coinmech_fleet_commands_sent_total", figures.commandsSent, help: "Operators' commands published")
        counter("coinmech_fleet_broker_connects_total", figures.brokerConnects, help: "Connections the broker accepted")
        gauge("coinmech_fleet_ingest_lag_seconds", figures.lastLagSeconds, help: "The last batch: the bridge's publish to the commit")
        gauge("coinmech_fleet_commit_seconds", figures.commitSeconds, help: "The last batch's transaction")
        for (cabinet, seq) in figures.contiguous.sorted(by: { $0.key < $1.key }) {
            gauge("coinmech_fleet_contiguous_seq", Double(seq), [("cabinet", cabinet)], help: "Every seq up to this one is stored (F7)")
        }
        let read = figures.databaseUp ? await databaseFigures(store, within: databaseSeconds) : nil
        if let tallies = read?.tallies {
            for state in ["online", "offline", "unknown"] {
                gauge("coinmech_fleet_cabinets", Double(tallies.cabinets[state] ?? 0), [("state", state)], help: "Cabinets by their bridge's state")
            }
            for kind in (AlertRules.kinds.union(["events_missing", "ledger_conflict", "refused_messages"])).sorted() {
                gauge("coinmech_fleet_alerts_open", Double(tallies.openAlerts[kind] ?? 0), [("kind", kind)], help: "Open alerts by kind")
            }
        }
        // The customer's credit per cabinet and currency, from the tallies kept as events are
        // stored (docs/FLEET.md, "The customer's credit"): every kind present, 0 before its first.
        if let credit = read?.credit {
            for figures in credit {
                let labels = [("cabinet", figures.cabinet), ("currency", figures.currency)]
                if let balance = figures.balanceMinor {
                    gauge("coinmech_fleet_credit_balance_minor", Double(balance), labels,
                          help: "The customer's credit: the balance its latest credit event left, plus the coins stored after it")
                }
                for (kind, series, what) in Self.creditSeries {
                    let moves = figures.moves[kind] ?? (0, 0)
                    labeledCounter("coinmech_fleet_credit_\(series)_total", moves.count, labels, help: "\(what) stored, per cabinet")
                    labeledCounter("coinmech_fleet_credit_\(series)_value_minor_total", moves.minor, labels, help: "\(what) stored: their value_minor, per cabinet")
                }
            }
        }
        return String(decoding: r.emitToBuffer(), as: UTF8.self)
    }

    /// The figures the scrape reads from the database, each nil if it failed; nil past the deadline.
    private static func databaseFigures(_ store: FleetStore, within seconds: Double) async
        -> (tallies: (cabinets: [String: Int], openAlerts: [String: Int])?, credit: [FleetStore.CreditFigures]?)? {
        try? await withinDeadline(seconds, "the scrape's figures") {
            (try? await store.tallies(), try? await store.creditFigures())
        }
    }
}
