import ArgumentParser
import CoinMechHarness
import Foundation

/// `make test-fleet`: PostgreSQL and mosquitto started by the test, two coinmech-fleet instances
/// on disjoint groups of sites, and three cabinets (coinsim, coinmechd and coinmech-bridge each;
/// one a ccTalk acceptor) while the instances are killed with -9 in turn, PostgreSQL crashes and
/// restarts, the broker is killed and restarted, and one cabinet is off line for a minute of
/// coins. Then every ledger is compared with the fleet's database event for event, the totals to
/// the cent, each instance with the sites it takes, and the dashboard is loaded in headless
/// Chromium. The last line is the verdict as JSON.
@main
struct FleetChaos: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinmech-fleet-chaos",
        abstract: "Prove every cabinet's ledger reaches the fleet's database once, through crashes of the fleet, the database and the broker, and a cabinet off line.",
        discussion: """
            Prints one line per fault, then
            {"cabinets":3,"events":…,"fleet_kills":…,"lost":0,"doubled":0,"gaps_left":0,…,"instances":[{"name":"fleet-1",…},…]}.
            Exit status: 0 every event once and the totals equal; 1 not (the lines above say which); 2 the run could not be made.
            """)

    @Option(help: "Directory of the coinmechd, coinsim, coinmech-bridge, coinmech-fleet and plugin builds (default: this executable's).")
    var bin: String?
    @Option(help: "Cabinets (the third is a ccTalk acceptor).") var cabinets = 3
    @Option(help: "SIGKILLs of coinmech-fleet at random moments, each followed by a new one at once.") var fleetKills = 10
    @Option(help: "Seconds one cabinet stays off line while its coins keep coming.") var offline = 60.0
    @Flag(inversion: .prefixedNo, help: "A fourth cabinet in hostile hands: seqs out of range, oversized and malformed payloads, sparse seqs, forged replies, floods.")
    var hostile = true
    @Option(help: "Seconds PostgreSQL stays down under the hostile cabinet's flood (the fleet's memory is measured then).") var databaseDown = 20.0
    @Option(help: "Copies of the hostile cabinet's 2,000-event window of 1 kB events in its flood.") var floodCopies = 15
    @Option(help: "The fleet instances' groups of sites: ';' between instances, ',' between the sites of one (the cabinets are on north and south).")
    var siteGroups = "north;south"
    @Option(help: "Seed of the random moments (default: a new one, printed).") var seed: UInt64?
    @Option(help: "Where the dashboard's screenshots go.") var screenshots = ".build/fleet-screenshots"
    @Flag(help: "Keep the scratch directory (ledgers, database, logs) and print its path.") var keep = false
    @Option(help: "The tests' CA (make test-ca): the broker speaks TLS with a certificate it signed, as shipped; none: plaintext.")
    var ca = ".build/test-ca"
    @Option(help: "The package's packaging folder: the Prometheus rules and Grafana dashboard whose series are checked against the run's /metrics.")
    var packaging = "packaging"

    func run() throws {
        let seed = seed ?? UInt64.random(in: 1...999_999)
        let repeatIt = "coinmech-fleet-chaos --seed \(seed) --cabinets \(cabinets) --fleet-kills \(fleetKills) --offline \(offline) --site-groups '\(siteGroups)'"
            + (hostile ? " --database-down \(databaseDown) --flood-copies \(floodCopies)" : " --no-hostile")
        print("coinmech-fleet-chaos: seed \(seed) (\(repeatIt) repeats this run)")
        do {
            let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            let binDir = bin ?? (exe as NSString).deletingLastPathComponent
            let tls: TestCA?
            do { tls = ca == "none" ? nil : try TestCA(dir: ca) } catch { throw FleetChaosError("\(error)") }
            let groups = siteGroups.split(separator: ";", omittingEmptySubsequences: false).map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
            let chaos = try FleetChaosRun(bin: binDir, seed: seed, tls: tls, packaging: packaging, siteGroups: groups)
            let part = FleetChaosRun.Hostile(enabled: hostile, databaseDownSeconds: databaseDown, floodCopies: floodCopies)
            var verdict = try chaos.play(cabinetCount: cabinets, fleetKills: fleetKills, offlineSeconds: offline, hostile: part) { verdict in
                let ledgers = try chaos.cabinets.map { cabinet in
                    (name: cabinet.name, cashBox: verdict.cashBoxes[cabinet.name] ?? [:], credited: try cabinet.ledger().filter { $0.kind == "coin" }.count)
                }
                return try DashboardCheck(bin: binDir, dir: chaos.dir, configuration: chaos.dashboardFleet.configuration, port: chaos.dashboardFleet.httpPort,
                                          screenshots: screenshots)
                    .run(cabinets: ledgers)
            }
            verdict.seed = seed
            if keep { print("kept: \(chaos.dir)") } else { try? FileManager.default.removeItem(atPath: chaos.dir) }
            print("screenshots: \(screenshots)")
            for problem in verdict.hostileProblems { print("HOSTILE: \(problem)") }
            for problem in verdict.instanceProblems { print("INSTANCE: \(problem)") }
            if !verdict.isClean { print("an event was lost or doubled, a total differs, a fleet instance exited or kept not to its sites, the hostile cabinet went unseen, the dashboard failed or a shipped rule reads no exported series; repeat with: \(repeatIt) --keep") }
            print(verdict.json)
            if !verdict.isClean { throw ExitCode(1) }
        } catch let error as FleetChaosError {
            FileHandle.standardError.write(Data("coinmech-fleet-chaos: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}
