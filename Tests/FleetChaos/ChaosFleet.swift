import CoinMechHarness
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One coinmech-fleet instance of the run (docs/FLEET.md, "Partition by site"): its name, the
/// sites it takes, its own persistent MQTT session, HTTP port and listening clock, against the
/// one database and broker of the run; killed with -9 and started again by the chaos.
final class ChaosFleet {
    let name: String
    let sites: [String]
    /// Its `alerts.offline_after_s`. The instances differ in it on purpose: an `offline` alert
    /// opened sooner after a cabinet went away than its owner's figure was opened by another
    /// instance (FleetChaosRun checks the offline cabinet's alert by it).
    let offlineAfter: Double
    let httpPort: Int
    let configuration: String
    private let dir: String
    private(set) var process: ChildProcess?
    private var starts = 0
    /// Kills of it by the run, and exits by itself (none may be).
    var kills = 0
    var exits = 0
    /// `offline` alerts opened for a cabinet of another instance's sites sooner than that
    /// instance's `offline_after_s`, and not before this one's: its own.
    var othersAlerts = 0
    /// What it refused, by kind, from its `/metrics`: the most any one run of it counted (each
    /// restart counts from nothing).
    var refused: [String: Int] = [:]

    init(name: String, sites: [String], offlineAfter: Double, dir: String) throws {
        self.name = name
        self.sites = sites
        self.offlineAfter = offlineAfter
        self.dir = dir
        configuration = "\(dir)/\(name).yaml"
        do { httpPort = try Loopback.freePort() } catch { throw FleetChaosError("\(error)") }
    }

    func owns(site: String) -> Bool { sites.contains(site) }

    func writeConfiguration(broker: MosquittoBroker, database: PostgresCluster, databaseName: String) throws {
        try """
            instance: \(name)
            mqtt: {host: 127.0.0.1, port: \(broker.port), keepalive_s: 5, client_id: coinmech-\(name), sites: [\(sites.joined(separator: ", "))], \(broker.tlsSetting)}
            database: {socket_dir: \(database.socketDirectory), port: \(database.port), user: postgres, name: \(databaseName)}
            http: {listen: "127.0.0.1:\(httpPort)"}
            ingest: {gap_grace_s: 2}
            alerts: {check_s: 1, offline_after_s: \(offlineAfter)}
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
    }

    func start(bin: String) throws {
        starts += 1
        process = try ChildProcess(path: "\(bin)/coinmech-fleet", ["run", "--config", configuration], stderrPath: "\(dir)/\(name)-\(starts).log")
    }

    /// kill -9, reaped.
    func kill() {
        process?.signal(SIGKILL)
        _ = process?.wait(timeout: 10)
    }

    /// True once for a process that is not running though the run did not kill it: it exited
    /// by itself, what no cabinet may cause.
    func exitedByItself() -> Bool {
        guard let process, !process.isRunning else { return false }
        exits += 1
        print("EXITED: \(name) exited by itself (status \(process.exitStatus.map(String.init) ?? "?")): see \(process.stderrPath)")
        return true
    }

    /// Its resident memory, bytes (0 if it does not run).
    func resident() -> Int {
        guard let process, process.isRunning, let status = try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// Its `/metrics` now ("" if it does not answer).
    func metrics() -> String { (try? HTTPProbe(port: httpPort).request("GET", "/metrics").body) ?? "" }

    /// Reads its refusals, by kind, from `/metrics`; keeps the most.
    func countRefusals() {
        for line in metrics().split(separator: "\n") where line.hasPrefix("coinmech_fleet_refused_total{") {
            guard let kind = line.split(separator: "\"").dropFirst().first, let count = Double(line.split(separator: " ").last ?? "") else { continue }
            refused[String(kind)] = max(refused[String(kind)] ?? 0, Int(count))
        }
    }

    /// The cabinets its `/metrics` gives a contiguous seq, with it: the cabinets it writes.
    func contiguous() -> [String: Int64] {
        var out: [String: Int64] = [:]
        for line in metrics().split(separator: "\n") where line.hasPrefix("coinmech_fleet_contiguous_seq{") {
            guard let cabinet = line.split(separator: "\"").dropFirst().first, let seq = Double(line.split(separator: " ").last ?? "") else { continue }
            out[String(cabinet)] = Int64(seq)
        }
        return out
    }
}
