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
    /// Times coinmech-fleet exited without being killed by the run: none may.
    var fleetExits = 0
    /// The hostile cabinet: messages it published, resends it answered "missing", its alerts,
    /// and what the fleet refused, by kind (the most one run of the fleet counted).
    var hostile = false
    var hostilePublished = 0
    var hostileAnswered = 0
    var hostileAlerts: [String] = []
    var refused: [String: Int] = [:]
    /// The fleet's resident memory before PostgreSQL went away, and at most while it was away
    /// for `databaseDownSeconds` under the hostile cabinet's flood, bytes.
    var residentBefore = 0
    var residentPeakDown = 0
    var databaseDownSeconds = 0.0
    /// The honest cabinets' lag (the one kept off line left out), its ledger's commit to the
    /// fleet's, seconds.
    var lagP50 = 0.0
    var lagP99 = 0.0
    var lagMax = 0.0
    /// The shipped rules' and dashboard's expressions checked against the run's /metrics, and
    /// what was wrong (a series not exported, a label or value no sample has).
    var seriesChecked = 0
    var seriesProblems = 0
    /// Each fleet instance's part, against the ground truth of which sites it takes.
    var instances: [Instance] = []

    /// One instance's part: its cabinets' ledgers against the database, and whether it kept to
    /// its sites (docs/FLEET.md, "Partition by site").
    struct Instance {
        var name = ""
        var sites: [String] = []
        /// The cabinets on its sites (the hostile one among them if its site is one).
        var cabinets: [String] = []
        var kills = 0
        var exits = 0
        /// Its cabinets' ledger events, and of those: lost, doubled, seqs missing below the
        /// highest stored.
        var events = 0
        var lost = 0
        var doubled = 0
        var gapsLeft = 0
        /// Its own row in `listening` (its listening clock).
        var listening = false
        /// Its honest cabinets whose `hearing` row names another instance, or that have none.
        var hearingOthers: [String] = []
        /// Cabinets its `/metrics` gives a contiguous seq that are not on its sites, and cabinets
        /// of its sites it gives none or another seq than their ledger's last.
        var writesOthers: [String] = []
        var ledgerBehind: [String] = []
        /// Refusals of kinds only the hostile cabinet causes, counted by an instance that does
        /// not take its site.
        var othersRefused = 0
        /// `offline` alerts it opened for a cabinet of another's sites (told by its own
        /// `offline_after_s`, which no other instance has).
        var othersAlerts = 0

        var problems: [String] {
            var out: [String] = []
            if cabinets.filter({ !$0.hasPrefix("h-") }).isEmpty { out.append("\(name) takes no honest cabinet") }
            if !listening { out.append("\(name) has no row in listening") }
            if !hearingOthers.isEmpty { out.append("hearing of \(hearingOthers) does not name \(name)") }
            if !writesOthers.isEmpty { out.append("\(name) writes \(writesOthers), not on its sites") }
            if !ledgerBehind.isEmpty { out.append("\(name)'s contiguous seq of \(ledgerBehind) is not the ledger's last") }
            if othersRefused > 0 { out.append("\(name) refused \(othersRefused) message(s) of a cabinet not on its sites") }
            if othersAlerts > 0 { out.append("\(name) opened \(othersAlerts) offline alert(s) for a cabinet not on its sites") }
            return out
        }

        var json: JSON {
            [
                "name": .string(name), "sites": .array(sites.map(JSON.string)), "cabinets": .array(cabinets.map(JSON.string)),
                "kills": .int(Int64(kills)), "exits": .int(Int64(exits)), "events": .int(Int64(events)),
                "lost": .int(Int64(lost)), "doubled": .int(Int64(doubled)), "gaps_left": .int(Int64(gapsLeft)), "listening": .bool(listening),
                "hearing_others": .int(Int64(hearingOthers.count)), "writes_others": .int(Int64(writesOthers.count)),
                "ledger_behind": .int(Int64(ledgerBehind.count)), "others_refused": .int(Int64(othersRefused)), "others_alerts": .int(Int64(othersAlerts)),
            ]
        }
    }
    /// Rows of `listening`: one per instance, no more.
    var listeningRows = 0
    /// Problems of no one instance: no offline alert opened while the cabinet was away, or one
    /// opened sooner than any instance's `offline_after_s`.
    var partitionProblems: [String] = []

    var instanceProblems: [String] {
        var out = partitionProblems + instances.flatMap(\.problems)
        if listeningRows != instances.count { out.append("listening has \(listeningRows) row(s) for \(instances.count) instance(s)") }
        return out
    }

    /// Every kind the hostile cabinet's rounds and flood produce.
    static let hostileKinds = ["seq_range", "too_large", "malformed", "version", "wrong_cabinet", "value_range", "ahead", "forged_reply", "flood"]
    /// What the fleet may grow by while the database is away: its inbox (8 MiB) and queues
    /// (16 MiB, and one take beyond), with room for the allocator.
    static let residentBound = 96 << 20

    var hostileProblems: [String] {
        guard hostile else { return [] }
        var problems = Self.hostileKinds.filter { (refused[$0] ?? 0) == 0 }.map { "nothing refused as \($0)" }
        if !hostileAlerts.contains("refused_messages") { problems.append("no refused_messages alert for h-1") }
        if residentPeakDown - residentBefore > Self.residentBound { problems.append("the fleet grew by \((residentPeakDown - residentBefore) >> 20) MB while the database was away") }
        if lagP99 > databaseDownSeconds + 60 { problems.append("the honest cabinets' lag p99 \(lagP99) s") }
        return problems
    }

    var isClean: Bool {
        lost == 0 && doubled == 0 && gapsLeft == 0 && totalsDiffer == 0 && events > 0 && offlineAlert && dashboardErrors == 0 && fleetExits == 0
            && seriesChecked > 0 && seriesProblems == 0
            && hostileProblems.isEmpty && instanceProblems.isEmpty
    }

    var json: String {
        let object: JSON = [
            "seed": .int(Int64(seed)), "cabinets": .int(Int64(cabinets)), "events": .int(Int64(events)), "fleet_kills": .int(Int64(fleetKills)),
            "postgres_restarts": .int(Int64(postgresRestarts)), "broker_restarts": .int(Int64(brokerRestarts)), "offline_s": .double(offlineSeconds),
            "offline_alert": .bool(offlineAlert), "lost": .int(Int64(lost)), "doubled": .int(Int64(doubled)), "gaps_left": .int(Int64(gapsLeft)),
            "totals_differ": .int(Int64(totalsDiffer)), "resends_asked": .int(Int64(resendsAsked)),
            "dashboard_pages": .int(Int64(dashboardPages)), "dashboard_errors": .int(Int64(dashboardErrors)), "fleet_exits": .int(Int64(fleetExits)),
            "lag_s": ["p50": .double(lagP50), "p99": .double(lagP99), "max": .double(lagMax)],
            "series_checked": .int(Int64(seriesChecked)), "series_problems": .int(Int64(seriesProblems)),
            "instances": .array(instances.map(\.json)), "listening_rows": .int(Int64(listeningRows)),
            "instance_problems": .int(Int64(instanceProblems.count)),
        ]
        guard hostile else { return object.description }
        var withHostile = object.object ?? [:]
        withHostile["hostile"] = [
            "published": .int(Int64(hostilePublished)), "resends_answered_missing": .int(Int64(hostileAnswered)),
            "alerts": .array(hostileAlerts.map(JSON.string)), "refused": .object(refused.mapValues { .int(Int64($0)) }),
            "database_down_s": .double(databaseDownSeconds), "resident_mb_before": .int(Int64(residentBefore >> 20)), "resident_mb_peak_down": .int(Int64(residentPeakDown >> 20)),
        ]
        return JSON.object(withHostile).description
    }
}
