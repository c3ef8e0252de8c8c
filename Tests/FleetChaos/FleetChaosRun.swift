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

    init(bin: String, seed: UInt64) throws {
        self.bin = bin
        self.seed = seed
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
        mqtt: {host: 127.0.0.1, port: \(broker.port), keepalive_s: 5, client_id: coinmech-fleet-chaos}
        database: {socket_dir: \(database.socketDirectory), port: \(database.port), user: postgres, name: \(Self.databaseName)}
        http: {listen: "127.0.0.1:\(httpPort)"}
        ingest: {gap_grace_s: 2}
        alerts: {check_s: 1, offline_after_s: 20}
        """
    }

    func play(cabinetCount: Int, fleetKills: Int, offlineSeconds: Double, dashboard: (FleetVerdict) throws -> (pages: Int, errors: Int)) throws -> FleetVerdict {
        var verdict = FleetVerdict()
        try FileManager.default.createDirectory(atPath: "\(dir)/postgres", withIntermediateDirectories: true)
        do {
            database = try PostgresCluster(dir: "\(dir)/postgres")
            try database.psql("CREATE DATABASE \(Self.databaseName)", database: "postgres")
            broker = try MosquittoBroker(dir: dir, autosave: 1)
        } catch { throw FleetChaosError("\(error)") }
        defer {
            fleet?.signal(SIGKILL)
            _ = fleet?.wait(timeout: 10)
            for cabinet in cabinets { cabinet.stop() }
            broker?.kill()
            database?.stop()
        }
        try fleetConfiguration.write(toFile: "\(dir)/fleet.yaml", atomically: true, encoding: .utf8)
        try startFleet()
        // Two serial cabinets and one ccTalk acceptor, on two sites.
        for index in 0..<cabinetCount {
            let cabinet = try ChaosCabinet(name: "c-\(index + 1)", site: index % 2 == 0 ? "north" : "south", kind: index == 2 ? .cctalk : .serial,
                                           root: dir, bin: bin, brokerPort: broker.port, seed: seed &+ UInt64(index))
            try cabinet.start()
            cabinets.append(cabinet)
        }
        try waitUntil("every cabinet's first events stored", timeout: 60) {
            let stored = try self.query("SELECT count(DISTINCT cabinet) FROM events")
            return Int(stored) == cabinetCount
        }

        // The faults at random moments over the offline cabinet's absence and a little beyond.
        let offline = cabinets[min(1, cabinets.count - 1)]
        let span = offlineSeconds + 20
        var faults: [(at: Double, fault: Fault)] = (0..<fleetKills).map { _ in (Double(random.next() % UInt64(span * 1000)) / 1000, .fleetKill) }
        faults.append((Double(random.next() % UInt64(span * 1000)) / 1000, .postgresRestart))
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
                fleet?.signal(SIGKILL)
                _ = fleet?.wait(timeout: 10)
                try startFleet()
                verdict.fleetKills += 1
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
        verdict.resendsAsked = Int(try query("SELECT count(*) FROM commands WHERE name = 'resend'")) ?? 0
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
