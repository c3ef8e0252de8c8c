import CoinMechHarness
import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
import CoinSimCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One run: PostgreSQL, mosquitto, coinmech-fleet and the cabinets in a scratch directory; the
/// faults at random moments while coins keep coming; then every ledger against the fleet's
/// database, event for event, and the totals to the cent.
final class FleetChaosRun {
    let bin: String
    let dir: String
    var random: SplitMix64
    let seed: UInt64
    private(set) var cabinets: [ChaosCabinet] = []
    private(set) var database: PostgresCluster!
    private(set) var broker: MosquittoBroker!
    private var fleet: ChildProcess?
    private var fleetStarts = 0
    let httpPort: Int
    static let databaseName = "coinmech_fleet"

    /// The CA of the broker's TLS; nil: plaintext.
    let tls: TestCA?
    /// The shipped Prometheus rules and Grafana dashboard (packaging/): their series are checked
    /// against this run's /metrics.
    let packaging: String

    init(bin: String, seed: UInt64, tls: TestCA?, packaging: String) throws {
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
        do { httpPort = try Loopback.freePort() } catch { throw FleetChaosError("\(error)") }
    }

    var fleetConfiguration: String {
        """
        instance: fleet-chaos
        mqtt: {host: 127.0.0.1, port: \(broker.port), keepalive_s: 5, client_id: coinmech-fleet-chaos, \(broker.tlsSetting)}
        database: {socket_dir: \(database.socketDirectory), port: \(database.port), user: postgres, name: \(Self.databaseName)}
        http: {listen: "127.0.0.1:\(httpPort)"}
        ingest: {gap_grace_s: 2}
        alerts: {check_s: 1, offline_after_s: 20}
        """
    }

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
            fleet?.signal(SIGKILL)
            _ = fleet?.wait(timeout: 10)
            for cabinet in cabinets { cabinet.stop() }
            broker?.kill()
            database?.stop()
        }
        try fleetConfiguration.write(toFile: "\(dir)/fleet.yaml", atomically: true, encoding: .utf8)
        try startFleet()
        // Two serial cabinets and one ccTalk acceptor, on two sites. c-2's mech loses power
        // during its 20th, 40th and 60th coins: it holds unconfirmed coins (never collected:
        // c-1 is), whose series the alert rules read.
        for index in 0..<cabinetCount {
            let cabinet = try ChaosCabinet(name: "c-\(index + 1)", site: index % 2 == 0 ? "north" : "south", kind: index == 2 ? .cctalk : .serial,
                                           root: dir, bin: bin, broker: broker, seed: seed &+ UInt64(index), powerLossAt: index == 1 ? [20, 40, 60] : [])
            try cabinet.start()
            cabinets.append(cabinet)
        }
        try waitUntil("every cabinet's first events stored", timeout: 60) {
            let stored = try self.query("SELECT count(DISTINCT cabinet) FROM events WHERE cabinet LIKE 'c-%'")
            return Int(stored) == cabinetCount
        }
        // The fourth cabinet, in someone else's hands, from now to the end of the faults.
        if hostile.enabled {
            let made = try HostileCabinet(name: "h-1", site: "north", root: dir, broker: broker.clientArguments)
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
        for (at, fault) in faults {
            // The schedule's pace, not a wait for anything: coins keep coming meanwhile.
            let wait = at - Date().timeIntervalSince(began)
            if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            switch fault {
            case .fleetKill:
                noteExit(&verdict)
                fleet?.signal(SIGKILL)
                _ = fleet?.wait(timeout: 10)
                try startFleet()
                verdict.fleetKills += 1
            case .countRefusals:
                countRefusals(&verdict)
            case .postgresDownUnderFlood:
                guard let intruder else { break }
                noteExit(&verdict)
                verdict.residentBefore = resident()
                database.stop()
                let flooding = Thread { intruder.flood(copies: hostile.floodCopies, pad: 900) }
                flooding.start()
                var peak = verdict.residentBefore
                let end = Date().addingTimeInterval(hostile.databaseDownSeconds)
                while Date() < end {
                    peak = max(peak, resident())
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
                offline.killBridge()
            case .cabinetOnline:
                try offline.startBridge()
                verdict.offlineSeconds = offlineSeconds
            }
            print(String(format: "%6.1f s  %@", Date().timeIntervalSince(began), fault.rawValue))
        }
        // The offline cabinet's alert was raised while it was away, and closes now it is back.
        try waitUntil("the offline alert of \(offline.name) raised and closed", timeout: 60) {
            try self.query("SELECT count(*) FROM alerts WHERE cabinet = '\(offline.name)' AND kind = 'offline' AND closed IS NOT NULL") != "0"
        }
        verdict.offlineAlert = true

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
        for cabinet in cabinets {
            let events = ledgers[cabinet.name] ?? []
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
            print("h-1: \(intruder.published) message(s) published, \(intruder.answered) resend(s) answered 'missing'; alerts \(verdict.hostileAlerts); refused by this run of the fleet: \(verdict.refused)")
        }
        print(String(format: "fleet resident: %.0f MB before PostgreSQL went away, %.0f MB at most in its %.0f s away under the flood",
                     Double(verdict.residentBefore) / 1_048_576, Double(verdict.residentPeakDown) / 1_048_576, verdict.databaseDownSeconds))
        // The shipped rules and Grafana dashboard against what this fleet and these bridges
        // export, while everything still runs.
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

    /// What the running fleet has refused, by kind, from its `/metrics`: the most any run of it
    /// counted is kept (each restart counts from nothing).
    func countRefusals(_ verdict: inout FleetVerdict) {
        let metrics = (try? HTTPProbe(port: httpPort).request("GET", "/metrics").body) ?? ""
        for line in metrics.split(separator: "\n") where line.hasPrefix("coinmech_fleet_refused_total{") {
            guard let kind = line.split(separator: "\"").dropFirst().first, let count = Double(line.split(separator: " ").last ?? "") else { continue }
            verdict.refused[String(kind)] = max(verdict.refused[String(kind)] ?? 0, Int(count))
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
                for port in [httpPort] + cabinets.map(\.metricsPort) { text += ((try? HTTPProbe(port: port).request("GET", "/metrics").body) ?? "") + "\n" }
                problems = SeriesCheck.problems(expressions, exported: SeriesCheck.exported(text))
                if !problems.isEmpty { usleep(500_000) }  // the pace of reading again
            } while !problems.isEmpty && Date() < deadline
            print("series: \(expressions.count) expressions of \((rules + dashboards).map { ($0 as NSString).lastPathComponent }.joined(separator: ", ")) against the fleet's and \(cabinets.count) bridges' /metrics: \(problems.count) problem(s)")
        } catch {
            problems = ["\(error)"]
        }
        for problem in problems { print("SERIES: \(problem)") }
        verdict.seriesProblems = problems.count
    }

    /// A fleet that is not running when the run did not kill it exited by itself: what no
    /// cabinet may cause.
    func noteExit(_ verdict: inout FleetVerdict) {
        guard let fleet, !fleet.isRunning else { return }
        verdict.fleetExits += 1
        print("EXITED: coinmech-fleet exited by itself (status \(fleet.exitStatus.map(String.init) ?? "?")): see \(fleet.stderrPath)")
    }

    /// The running fleet's resident memory, bytes (0 if none runs).
    func resident() -> Int {
        guard let fleet, fleet.isRunning, let status = try? String(contentsOfFile: "/proc/\(fleet.pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    func startFleet() throws {
        fleetStarts += 1
        fleet = try ChildProcess(path: "\(bin)/coinmech-fleet", ["run", "--config", "\(dir)/fleet.yaml"], stderrPath: "\(dir)/coinmech-fleet-\(fleetStarts).log")
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
