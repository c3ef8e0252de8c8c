import CoinMechProtocol

/// What the run did, and the fleet's database against every ledger.
struct FleetVerdict {
    var seed: UInt64 = 0
    var cabinets = 0
    /// The ledgers' events at the end, all cabinets.
    var events = 0
    var fleetKills = 0
    var postgresRestarts = 0
    var brokerRestarts = 0
    var offlineSeconds = 0.0
    /// The offline cabinet's `offline` alert was opened and then closed.
    var offlineAlert = false
    /// Ledger events the database does not hold.
    var lost = 0
    /// Rows that are not their ledger event: another kind or time under its identity, or a seq
    /// the ledger does not have.
    var doubled = 0
    /// Seqs missing below a cabinet's highest stored one.
    var gapsLeft = 0
    /// Cabinets and periods whose totals differ between the fleet and the daemon.
    var totalsDiffer = 0
    /// `cmd/resend` the fleet sent for gaps.
    var resendsAsked = 0
    /// Per cabinet: the cash box by currency, as the fleet sums it (for the dashboard's check).
    var cashBoxes: [String: [String: Int64]] = [:]
    /// The dashboard's pages loaded in Chromium with the right figures and no console error.
    var dashboardPages = 0
    var dashboardErrors = 0

    var isClean: Bool {
        lost == 0 && doubled == 0 && gapsLeft == 0 && totalsDiffer == 0 && events > 0 && offlineAlert && dashboardErrors == 0
    }

    var json: String {
        let object: JSON = [
            "seed": .int(Int64(seed)), "cabinets": .int(Int64(cabinets)), "events": .int(Int64(events)), "fleet_kills": .int(Int64(fleetKills)),
            "postgres_restarts": .int(Int64(postgresRestarts)), "broker_restarts": .int(Int64(brokerRestarts)), "offline_s": .double(offlineSeconds),
            "offline_alert": .bool(offlineAlert), "lost": .int(Int64(lost)), "doubled": .int(Int64(doubled)), "gaps_left": .int(Int64(gapsLeft)),
            "totals_differ": .int(Int64(totalsDiffer)), "resends_asked": .int(Int64(resendsAsked)),
            "dashboard_pages": .int(Int64(dashboardPages)), "dashboard_errors": .int(Int64(dashboardErrors)),
        ]
        return object.description
    }
}
