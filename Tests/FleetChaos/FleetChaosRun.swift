import CoinMechHarness
import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
import CoinSimCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One run: PostgreSQL, mosquitto, the coinmech-fleet instances (one per group of sites) and the
/// cabinets in a scratch directory; the faults at random moments while coins keep coming; then
/// every ledger against the fleet's database, event for event, and the totals to the cent, and
/// each instance against the sites it takes.
final class FleetChaosRun {
    let bin: String
    let dir: String
    var random: SplitMix64
    let seed: UInt64
    private(set) var cabinets: [ChaosCabinet] = []
    private(set) var database: PostgresCluster!
    private(set) var broker: MosquittoBroker!
    /// The instances, one per group of sites, against the one database and broker.
    private(set) var fleets: [ChaosFleet] = []
    let siteGroups: [[String]]
    static let databaseName = "coinmech_fleet"
    /// Kinds of refusal only the hostile cabinet causes (an honest bridge never sends them): an
    /// instance that does not take its site must count none.
    static let hostileOnlyKinds = ["seq_range", "too_large", "version", "wrong_cabinet", "value_range"]

    /// The CA of the broker's TLS; nil: plaintext.
    let tls: TestCA?
    /// The shipped Prometheus rules and Grafana dashboard (packaging/): their series are checked
    /// against this run's /metrics.
    let packaging: String

    init(bin: String, seed: UInt64, tls: TestCA?, packaging: String, siteGroups: [[String]]) throws {
        guard !siteGroups.isEmpty, siteGroups.allSatisfy({ !$0.isEmpty }) else { throw FleetChaosError("every instance takes at least one site") }
        self.siteGroups = siteGroups
        self.bin = bin
        self.seed = seed
        self.tls = tls
        self.packaging = packaging
        random = SplitMix64(seed: seed)
        var template = Array("\(NSTemporaryDirectory())/coinmech-fleet-chaos-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw FleetChaosError("mkdtemp: \(String(cString: strerror(errno)))") }
        dir = String(cString: made)
        // The postgres user must reach its folder inside.
        chmod(dir, 0o755)
        for tool in ["coinmechd", "coinsim", "coinmech-bridge", "coinmech-fleet", "libcoin-table.so", "libcoin-id.so"] where !FileManager.default.fileExists(atPath: "\(bin)/\(tool)") {
            throw FleetChaosError("\(bin)/\(tool) not found: build first (swift build), or pass --bin")
        }
    }

    /// The site of the cabinet at `index`: two sites, in turn.
    static func site(ofCabinet index: Int) -> String { index % 2 == 0 ? "north" : "south" }

    /// The instance whose sites take `site` (the first, should two take it: the run then finds
    /// the other writing cabinets it does not own).
    func owner(of site: String) -> ChaosFleet? { fleets.first { $0.owns(site: site) } }

    /// The instance the dashboard and the operator's commands go through.
    var dashboardFleet: ChaosFleet { fleets[0] }

    /// The hostile cabinet's part: whether it plays, how long PostgreSQL stays down under its
    /// flood, and how many copies of its 2,000-seq window of 1 kB events that flood is.
    struct Hostile {
        var enabled = true
        var databaseDownSeconds = 20.0
        var floodCopies = 15
    }

    func play(cabinetCount: Int, fleetKills: Int, offlineSeconds: Double, hostile: Hostile,
              dashboard: (FleetVerdict) throws -> (pages: Int, errors: Int)) throws -> FleetVerdict {
        var verdict = FleetVerdict()
        verdict.hostile = hostile.enabled
        try FileManager.default.createDirectory(atPath: "\(dir)/postgres", withIntermediateDirectories: true)
        do {
            database = try PostgresCluster(dir: "\(dir)/postgres")
            try database.psql("CREATE DATABASE \(Self.databaseName)", database: "postgres")
            broker = try MosquittoBroker(dir: dir, autosave: 1, tls: tls)
        } catch { throw FleetChaosError("\(error)") }
        var intruder: HostileCabinet?
        defer {
            try? intruder?.stop()
            for fleet in fleets { fleet.kill() }
            for cabinet in cabinets { cabinet.stop() }
            broker?.kill()
            database?.stop()
        }
        // One instance per group of sites, each with its own session, port and listening clock.
        // The offline cabinet's instance waits offline_after_s 20 before its alert, the others
        // 10: an alert for it opened sooner was opened by an instance that does not own it.
        let offlineSite = Self.site(ofCabinet: min(1, cabinetCount - 1))
        for (index, sites) in siteGroups.enumerated() {
            let ownsOffline = sites.contains(offlineSite) && owner(of: offlineSite) == nil
            let fleet = try ChaosFleet(name: "fleet-\(index + 1)", sites: sites, offlineAfter: ownsOffline ? 20 : 10, dir: dir)
            try fleet.writeConfiguration(broker: broker, database: database, databaseName: Self.databaseName)
            try fleet.start(bin: bin)
            fleets.append(fleet)
            print("\(fleet.name): sites \(sites.joined(separator: ", ")), offline_after_s \(Int(fleet.offlineAfter)), http 127.0.0.1:\(fleet.httpPort)")
        }
        // Two serial cabinets and one ccTalk acceptor, on two sites. c-2's mech loses power
        // during its 20th, 40th and 60th coins: it holds unconfirmed coins (never collected:
        // c-1 is), whose series the alert rules read.
        for index in 0..<cabinetCount {
            let cabinet = try ChaosCabinet(name: "c-\(index + 1)", site: Self.site(ofCabinet: index), kind: index == 2 ? .cctalk : .serial,
                                           root: dir, bin: bin, broker: broker, seed: seed &+ UInt64(index), powerLossAt: index == 1 ? [20, 40, 60] : [])
            try cabinet.start()
            cabinets.append(cabinet)
        }
        try waitUntil("every cabinet's first events stored", timeout: 60) {
            let stored = try self.query("SELECT count(DISTINCT cabinet) FROM events WHERE cabinet LIKE 'c-%'")
            return Int(stored) == cabinetCount
        }
        // The fourth cabinet, in someone else's hands, from now to the end of the faults.
        let hostileSite = Self.site(ofCabinet: 0)
        let hostileFleet = owner(of: hostileSite) ?? fleets[0]
        if hostile.enabled {
            let made = try HostileCabinet(name: "h-1", site: hostileSite, root: dir, broker: broker.clientArguments)
            try made.start(every: 3)
            intruder = made
        }

        // The faults at random moments over the offline cabinet's absence and a little beyond.
        let offline = cabinets[min(1, cabinets.count - 1)]
        let span = offlineSeconds + 20
        // PostgreSQL away under the hostile cabinet's flood, with no kill of the fleet inside
        // the window: its memory is measured there.
        let downAt = 25.0, downUntil = 25 + hostile.databaseDownSeconds + 10
        func outsideDown(_ at: Double) -> Double { hostile.enabled && at >= downAt - 2 && at < downUntil ? downUntil + (at - downAt + 2) : at }
        var faults: [(at: Double, fault: Fault)] = (0..<fleetKills).map { _ in (outsideDown(Double(random.next() % UInt64(span * 1000)) / 1000), .fleetKill) }
        faults.append((outsideDown(Double(random.next() % UInt64(span * 1000)) / 1000), .postgresRestart))
        if hostile.enabled {
            faults.append((downAt, .postgresDownUnderFlood))
            // Read before the next kill of the fleet, whose counters start again from nothing.
            faults.append((downUntil - 1, .countRefusals))
        }
        faults.append((Double(random.next() % UInt64(span * 1000)) / 1000, .brokerRestart))
        faults.append((Double(random.next() % UInt64(span * 500)) / 1000, .collect))
        faults.append((5, .cabinetOffline))
        faults.append((5 + offlineSeconds, .cabinetOnline))
        faults.sort { $0.at < $1.at }
        let began = Date()
        // When the offline cabinet went away and came back (wall clock, as the alerts' rows).
        var offlineAt = 0.0, onlineAt = 0.0
        for (at, fault) in faults {
            // The schedule's pace, not a wait for anything: coins keep coming meanwhile.
            let wait = at - Date().timeIntervalSince(began)
            if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            var which = ""
            switch fault {
            case .fleetKill:
                // The instances in turn.
                noteExit(&verdict)
                let fleet = fleets[verdict.fleetKills % fleets.count]
                fleet.kill()
                try fleet.start(bin: bin)
                fleet.kills += 1
                verdict.fleetKills += 1
                which = " (\(fleet.name))"
            case .countRefusals:
                countRefusals(&verdict)
            case .postgresDownUnderFlood:
                guard let intruder else { break }
                noteExit(&verdict)
                verdict.residentBefore = hostileFleet.resident()
                database.stop()
                let flooding = Thread { intruder.flood(copies: hostile.floodCopies, pad: 900) }
                flooding.start()
                var peak = verdict.residentBefore
                let end = Date().addingTimeInterval(hostile.databaseDownSeconds)
                while Date() < end {
                    peak = max(peak, hostileFleet.resident())
                    usleep(250_000)  // the sampling's pace
                }
                verdict.residentPeakDown = peak
                verdict.databaseDownSeconds = hostile.databaseDownSeconds
                do { try database.start() } catch { throw FleetChaosError("\(error)") }
                verdict.postgresRestarts += 1
            case .postgresRestart:
                database.crash()
                usleep(UInt32(random.next() % 2000 + 1000) * 1000)
                do { try database.start() } catch { throw FleetChaosError("\(error)") }
                verdict.postgresRestarts += 1
            case .brokerRestart:
                broker.kill()
                do { try broker.start() } catch { throw FleetChaosError("\(error)") }
                verdict.brokerRestarts += 1
            case .collect:
                _ = try cabinets[0].request("collect")
            case .cabinetOffline:
                offlineAt = Date().timeIntervalSince1970
                offline.killBridge()
            case .cabinetOnline:
                onlineAt = Date().timeIntervalSince1970
                try offline.startBridge()
                verdict.offlineSeconds = offlineSeconds
            }
            print(String(format: "%6.1f s  %@%@", Date().timeIntervalSince(began), fault.rawValue, which))
        }
        // The offline cabinet's alert was raised while it was away, and closes now it is back.
        try waitUntil("the offline alert of \(offline.name) raised and closed", timeout: 60) {
            try self.query("SELECT count(*) FROM alerts WHERE cabinet = '\(offline.name)' AND kind = 'offline' AND closed IS NOT NULL") != "0"
        }
        verdict.offlineAlert = true
        checkOfflineAlert(&verdict, of: offline, away: offlineAt, back: onlineAt)

        countRefusals(&verdict)
        try intruder?.stop()
        noteExit(&verdict)
        // The coins stop; every event of every ledger must reach the database.
        for cabinet in cabinets { try cabinet.stopCoins() }
        var ledgers: [String: [LedgerEvent]] = [:]
        try waitUntil("every ledger's last event stored and nothing more coming", timeout: 180) {
            var done = true
            for cabinet in self.cabinets {
                let events = try cabinet.ledger()
                ledgers[cabinet.name] = events
                let stored = Int64(try self.query("SELECT contiguous_seq FROM cabinets WHERE cabinet = '\(cabinet.name)'")) ?? 0
                if stored < events.last?.seq ?? 0 { done = false }
            }
            return done
        }
        verdict.instances = fleets.map { fleet in
            var part = FleetVerdict.Instance()
            (part.name, part.sites, part.kills, part.othersAlerts) = (fleet.name, fleet.sites, fleet.kills, fleet.othersAlerts)
            part.cabinets = cabinets.filter { owner(of: $0.site) === fleet }.map(\.name) + (hostile.enabled && hostileFleet === fleet ? ["h-1"] : [])
            return part
        }
        for cabinet in cabinets {
            let events = ledgers[cabinet.name] ?? []
            let counted = (events: verdict.events, lost: verdict.lost, doubled: verdict.doubled, gaps: verdict.gapsLeft)
            verdict.events += events.count
            var stored: [Int64: (kind: String, time: Double)] = [:]
            for row in try query("SELECT seq, kind, time FROM events WHERE cabinet = '\(cabinet.name)' ORDER BY seq").split(separator: "\n") {
                let fields = row.split(separator: "|")
                guard fields.count == 3, let seq = Int64(fields[0]), let time = Double(fields[2]) else { continue }
                stored[seq] = (String(fields[1]), time)
            }
            let ledger = Dictionary(uniqueKeysWithValues: events.map { ($0.seq, $0) })
            for event in events {
                guard let copy = stored[event.seq] else {
                    verdict.lost += 1
                    print("LOST: \(cabinet.name) seq \(event.seq) (\(event.kind))")
                    continue
                }
                if copy.kind != event.kind || abs(copy.time - event.time) > 0.0005 {
                    verdict.doubled += 1
                    print("DIFFERENT: \(cabinet.name) seq \(event.seq) stored as \(copy.kind) at \(copy.time), the ledger has \(event.kind) at \(event.time)")
                }
            }
            for seq in stored.keys where ledger[seq] == nil {
                verdict.doubled += 1
                print("PHANTOM: \(cabinet.name) seq \(seq) is not in the ledger")
            }
            let maxStored = stored.keys.max() ?? 0
            verdict.gapsLeft += Int(maxStored) - stored.count
            if let index = fleets.firstIndex(where: { $0.owns(site: cabinet.site) }) {
                verdict.instances[index].events += verdict.events - counted.events
                verdict.instances[index].lost += verdict.lost - counted.lost
                verdict.instances[index].doubled += verdict.doubled - counted.doubled
                verdict.instances[index].gapsLeft += verdict.gapsLeft - counted.gaps
            }
            // The totals to the cent: the fleet's sums of `coin` events against the daemon's own
            // totals table (kept by the ledger's writer, not from these events' rows).
            let totals = try cabinet.request("totals")
            for period in ["lifetime", "current"] {
                let daemon = (totals["\(period)_value"]?.object ?? [:]).mapValues { $0.int ?? -1 }
                let since = period == "current" ? " AND seq > coalesce((SELECT max(seq) FROM events WHERE cabinet = '\(cabinet.name)' AND kind = 'collect'), 0)" : ""
                var fleet: [String: Int64] = [:]
                for row in try query("SELECT currency, sum(value_minor) FROM events WHERE cabinet = '\(cabinet.name)' AND kind = 'coin'\(since) GROUP BY currency").split(separator: "\n") {
                    let fields = row.split(separator: "|")
                    if fields.count == 2 { fleet[String(fields[0])] = Int64(fields[1]) }
                }
                if fleet != daemon {
                    verdict.totalsDiffer += 1
                    print("TOTALS: \(cabinet.name) \(period): the fleet has \(fleet), the daemon \(daemon)")
                } else {
                    print("totals: \(cabinet.name) \(period) \(fleet)")
                }
                if period == "current" { verdict.cashBoxes[cabinet.name] = fleet }
            }
        }
        verdict.cabinets = cabinets.count
        verdict.resendsAsked = Int(try query("SELECT count(*) FROM commands WHERE cabinet LIKE 'c-%' AND name = 'resend'")) ?? 0
        // The honest cabinets' lag, ledger commit to the fleet's, leaving out the one kept off line.
        let lags = try query("""
            SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY received - time)::numeric, 2), round(percentile_cont(0.99) WITHIN GROUP (ORDER BY received - time)::numeric, 2),
                   round(max(received - time)::numeric, 2) FROM events WHERE cabinet LIKE 'c-%' AND cabinet <> '\(offline.name)'
            """).split(separator: "|").compactMap { Double($0) }
        if lags.count == 3 { (verdict.lagP50, verdict.lagP99, verdict.lagMax) = (lags[0], lags[1], lags[2]) }
        if let intruder {
            verdict.hostilePublished = intruder.published
            verdict.hostileAnswered = intruder.answered
            let alerts = try query("SELECT kind FROM alerts WHERE cabinet = 'h-1' ORDER BY kind").split(separator: "\n").map(String.init)
            verdict.hostileAlerts = Array(Set(alerts)).sorted()
            countRefusals(&verdict)
            print("h-1: \(intruder.published) message(s) published, \(intruder.answered) resend(s) answered 'missing'; alerts \(verdict.hostileAlerts); refused by the fleets: \(verdict.refused)")
        }
        print(String(format: "\(hostileFleet.name) resident: %.0f MB before PostgreSQL went away, %.0f MB at most in its %.0f s away under the flood",
                     Double(verdict.residentBefore) / 1_048_576, Double(verdict.residentPeakDown) / 1_048_576, verdict.databaseDownSeconds))
        // Each instance against the sites it takes, while everything still runs.
        try checkInstances(&verdict, ledgers: ledgers, hostileSite: hostile.enabled ? hostileSite : nil)
        // The shipped rules and Grafana dashboard against what these fleets and bridges export,
        // while everything still runs.
        checkSeries(&verdict)
        // The dashboard, while everything still runs.
        (verdict.dashboardPages, verdict.dashboardErrors) = try dashboard(verdict)
        return verdict
    }

    enum Fault: String {
        case fleetKill = "coinmech-fleet kill -9"
        case postgresRestart = "PostgreSQL crash and restart"
        case brokerRestart = "broker kill -9 and restart"
        case collect = "c-1 collected"
        case cabinetOffline = "c-2 off line (bridge killed)"
        case cabinetOnline = "c-2 back on line"
        case postgresDownUnderFlood = "PostgreSQL stopped under h-1's flood, and started again"
        case countRefusals = "the fleet's refusals counted"
    }

    /// What the running instances have refused, by kind, from their `/metrics`: the most any
    /// run of each counted is kept (each restart counts from nothing), summed over the instances.
    func countRefusals(_ verdict: inout FleetVerdict) {
        for fleet in fleets { fleet.countRefusals() }
        verdict.refused = fleets.reduce(into: [String: Int]()) { sum, fleet in sum.merge(fleet.refused, uniquingKeysWith: +) }
    }

    /// The offline cabinet's `offline` alerts: each opened by the instance that takes its site,
    /// told by that instance's own `offline_after_s` (the others' is shorter): an alert opened
    /// sooner after the cabinet went away was opened by an instance that does not own it.
    func checkOfflineAlert(_ verdict: inout FleetVerdict, of cabinet: ChaosCabinet, away: Double, back: Double) {
        guard let owner = owner(of: cabinet.site) else { return }
        let opened = ((try? query("SELECT opened FROM alerts WHERE cabinet = '\(cabinet.name)' AND kind = 'offline' ORDER BY opened")) ?? "")
            .split(separator: "\n").compactMap { Double($0) }
        for at in opened {
            let after = at - away
            print(String(format: "offline alert of %@ opened %.1f s after it went away (%@ waits %.0f s, the others %.0f s)", cabinet.name, after, owner.name,
                         owner.offlineAfter, fleets.filter { $0 !== owner }.map(\.offlineAfter).max() ?? 0))
            // A second early: the will reaches the fleet after the kill, never before.
            guard after < owner.offlineAfter - 1 else { continue }
            let others = fleets.filter { $0 !== owner && $0.offlineAfter - 1 <= after }
            for other in others { other.othersAlerts += 1 }
            if others.isEmpty { verdict.partitionProblems.append("the offline alert of \(cabinet.name) opened \(Int(after)) s after it went away: sooner than any instance's offline_after_s") }
        }
        if opened.isEmpty || opened.allSatisfy({ $0 >= back }) { verdict.partitionProblems.append("no offline alert of \(cabinet.name) opened while it was away") }
    }

    /// Each instance against the sites it takes: its own row in `listening` (its listening
    /// clock), the `hearing` row of each of its cabinets naming it, the cabinets its `/metrics`
    /// gives a contiguous seq exactly its own, each at its ledger's last seq, and no refusal of
    /// the hostile cabinet's kinds by an instance that does not take its site. Read until it
    /// holds or 20 s pass: an instance killed last may still be starting.
    func checkInstances(_ verdict: inout FleetVerdict, ledgers: [String: [LedgerEvent]], hostileSite: String?) throws {
        let deadline = Date().addingTimeInterval(20)
        var problems: [String] = []
        repeat {
            if !problems.isEmpty { usleep(500_000) }  // the pace of reading again
            let listening = Set(try query("SELECT instance FROM listening").split(separator: "\n").map(String.init))
            verdict.listeningRows = listening.count
            var hearing: [String: String] = [:]
            for row in try query("SELECT cabinet, instance FROM hearing").split(separator: "\n") {
                let fields = row.split(separator: "|").map(String.init)
                if fields.count == 2 { hearing[fields[0]] = fields[1] }
            }
            for (index, fleet) in fleets.enumerated() {
                var part = verdict.instances[index]
                part.exits = fleet.exits
                part.listening = listening.contains(fleet.name)
                let honest = cabinets.filter { owner(of: $0.site) === fleet }
                part.hearingOthers = honest.filter { hearing[$0.name] != fleet.name }.map(\.name)
                let written = fleet.contiguous()
                let mine = part.cabinets
                part.writesOthers = written.keys.filter { !mine.contains($0) }.sorted()
                part.ledgerBehind = honest.filter { written[$0.name] != ledgers[$0.name]?.last?.seq }.map(\.name)
                fleet.countRefusals()
                let takesHostile = hostileSite.map { owner(of: $0) === fleet } ?? true
                part.othersRefused = takesHostile ? 0 : Self.hostileOnlyKinds.reduce(0) { $0 + (fleet.refused[$1] ?? 0) }
                verdict.instances[index] = part
            }
            problems = verdict.instanceProblems
        } while !problems.isEmpty && Date() < deadline
        for part in verdict.instances {
            print("\(part.name) (\(part.sites.joined(separator: ", "))): cabinets \(part.cabinets), \(part.kills) kill(s), \(part.events) event(s): "
                  + "\(part.lost) lost, \(part.doubled) doubled, \(part.gapsLeft) gap(s) left; listening row \(part.listening)")
        }
    }

    /// Every expression of the shipped rules (packaging/prometheus/*.yml) and dashboards
    /// (packaging/grafana/*.json) must read series the fleet's and the bridges' /metrics export
    /// (SeriesCheck). Read until they do or 30 s pass: a bridge's figures come at its next poll.
    func checkSeries(_ verdict: inout FleetVerdict) {
        var problems: [String] = []
        do {
            let files = { (folder: String, suffix: String) in
                ((try? FileManager.default.contentsOfDirectory(atPath: "\(self.packaging)/\(folder)")) ?? []).filter { $0.hasSuffix(suffix) }.sorted().map { "\(self.packaging)/\(folder)/\($0)" }
            }
            let rules = files("prometheus", ".yml"), dashboards = files("grafana", ".json")
            guard !rules.isEmpty, !dashboards.isEmpty else { throw FleetChaosError("no rules or dashboard in \(packaging)/prometheus and \(packaging)/grafana: pass --packaging") }
            let expressions = try rules.flatMap(SeriesCheck.ruleExpressions) + dashboards.flatMap(SeriesCheck.dashboardExpressions)
            verdict.seriesChecked = expressions.count
            let deadline = Date().addingTimeInterval(30)
            repeat {
                var text = ""
                for port in fleets.map(\.httpPort) + cabinets.map(\.metricsPort) { text += ((try? HTTPProbe(port: port).request("GET", "/metrics").body) ?? "") + "\n" }
                problems = SeriesCheck.problems(expressions, exported: SeriesCheck.exported(text))
                if !problems.isEmpty { usleep(500_000) }  // the pace of reading again
            } while !problems.isEmpty && Date() < deadline
            print("series: \(expressions.count) expressions of \((rules + dashboards).map { ($0 as NSString).lastPathComponent }.joined(separator: ", ")) against \(fleets.count) fleets' and \(cabinets.count) bridges' /metrics: \(problems.count) problem(s)")
        } catch {
            problems = ["\(error)"]
        }
        for problem in problems { print("SERIES: \(problem)") }
        verdict.seriesProblems = problems.count
    }

    /// An instance that is not running when the run did not kill it exited by itself: what no
    /// cabinet may cause.
    func noteExit(_ verdict: inout FleetVerdict) {
        for fleet in fleets where fleet.exitedByItself() { verdict.fleetExits += 1 }
    }

    func query(_ sql: String) throws -> String {
        do { return try database.psql(sql, database: Self.databaseName) } catch { throw FleetChaosError("\(error)") }
    }

    /// Polls `condition` every 100 ms; a timeout fails the run. A failing query (PostgreSQL
    /// restarting) counts as not yet.
    func waitUntil(_ what: String, timeout: Double, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if (try? condition()) == true { return }
            guard Date() < deadline else { throw FleetChaosError("timed out after \(Int(timeout)) s waiting for \(what): see the logs in \(dir)") }
            usleep(100_000)
        }
    }
}
