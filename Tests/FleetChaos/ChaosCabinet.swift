import CoinMechClient
import CoinMechHarness
import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One cabinet of the run: coinsim playing its mech (serial) or acceptor (ccTalk) without end,
/// coinmechd on it, and coinmech-bridge publishing its ledger to the broker.
final class ChaosCabinet {
    enum Kind: String { case serial, cctalk }

    let name: String
    let site: String
    let kind: Kind
    let dir: String
    let bin: String
    private(set) var simulator: ChildProcess?
    private(set) var daemon: ChildProcess?
    private(set) var bridge: ChildProcess?
    private var starts: [String: Int] = [:]
    var socket: String { "\(dir)/run/coinmechd.sock" }
    /// The bridge's `/metrics` (the series check reads it).
    let metricsPort: Int

    /// `powerLossAt`: the insertions (a serial mech's) during which the mech loses power, so
    /// that the cabinet holds an unconfirmed coin, as a real one sometimes does (an insertion
    /// the daemon returned loses nothing: several make one sure).
    init(name: String, site: String, kind: Kind, root: String, bin: String, broker: MosquittoBroker, seed: UInt64, powerLossAt: [Int] = []) throws {
        self.name = name
        self.site = site
        self.kind = kind
        self.bin = bin
        dir = "\(root)/\(name)"
        do { metricsPort = try Loopback.freePort() } catch { throw FleetChaosError("\(error)") }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let source = kind == .serial
            ? "{kind: serial, device: mech, baud: 115200}"
            : "{kind: cctalk, device: mech, address: 2, checksum: simple8, poll_interval_ms: 200, currencies: [EUR]}"
        try FixtureDaemon.configuration(source: source, chain: kind == .serial ? FixtureChains.usd : FixtureChains.euroCoinIDs)
            .write(toFile: "\(dir)/coinmechd.yaml", atomically: true, encoding: .utf8)
        // Coins without end, about 3 a second, until coinsim is told to stop.
        let scenario = kind == .serial
            ? "baud: 115200\ncurrency: USD\nmix: {quarter: 3, dime: 2, nickel: 1}" + (powerLossAt.isEmpty ? "" : "\nfaults: {power_loss_at: \(powerLossAt)}")
            : """
              currency: EUR
              mix: {EUR_10c: 2, EUR_20c: 3, EUR_50c: 3, EUR_1: 4, EUR_2: 3}
              cctalk:
                coins: {"2": EU010A, "3": EU020A, "4": EU050A, "5": EU100A, "6": EU200A}
              """
        try "name: \(name)\nseed: \(seed)\ncoins: 0\nrate_per_s: 3\n\(scenario)\n".write(toFile: "\(dir)/scenario.yaml", atomically: true, encoding: .utf8)
        // An ack timeout of 3 s: what a fleet's crash loses comes back within seconds (B7). A
        // status each 5 s: the fleet calls a bridge killed while the broker was away silent
        // (no will can be sent then) inside the cabinet's absence.
        try """
            cabinet: \(name)
            site: \(site)
            socket: {path: \(socket)}
            state_dir: \(dir)/bridge
            metrics: {listen: "127.0.0.1:\(metricsPort)"}
            mqtt: {host: 127.0.0.1, port: \(broker.port), keepalive_s: 5, \(broker.tlsSetting)}
            delivery: {window: 128, ack_timeout_s: 3}
            status: {refresh_s: 5}
            """.write(toFile: "\(dir)/bridge.yaml", atomically: true, encoding: .utf8)
    }

    func start() throws {
        var arguments = ["--scenario", "\(dir)/scenario.yaml", "--link", "\(dir)/mech", "--truth", "\(dir)/truth.json", "--linger-ms", "3000"]
        if kind == .cctalk { arguments = ["--protocol", "cctalk", "--host-timeout", "30"] + arguments }
        let sim = try launch("coinsim", arguments)
        simulator = sim
        guard sim.readLine(timeout: 20) != nil else { throw FleetChaosError("\(name): coinsim printed no device: see \(dir)/coinsim-1.log") }
        let child = try launch("coinmechd", ["--config", "\(dir)/coinmechd.yaml", "--plugin-dir", bin])
        daemon = child
        let deadline = Date().addingTimeInterval(30)
        while (try? CoinMechConnection(path: socket)) == nil {
            guard child.isRunning else { throw FleetChaosError("\(name): the daemon exited during start-up: see \(child.stderrPath)") }
            guard Date() < deadline else { throw FleetChaosError("\(name): the daemon's socket did not appear in 30 s: see \(child.stderrPath)") }
            usleep(10_000)
        }
        try startBridge()
    }

    func startBridge() throws { bridge = try launch("coinmech-bridge", ["--config", "\(dir)/bridge.yaml"]) }

    /// The cabinet off the network: its bridge killed (the broker sends its last will).
    func killBridge() {
        bridge?.signal(SIGKILL)
        _ = bridge?.wait(timeout: 10)
        bridge = nil
    }

    /// The coins stop; returns once the daemon holds no accept waiting for the mech.
    func stopCoins() throws {
        simulator?.signal(SIGTERM)
        let client = try CoinMechConnection(path: socket)
        let settle = Date().addingTimeInterval(30)
        while Date() < settle, (try? client.request(.status)["pending"]?.int) != 0 { usleep(50_000) }
        guard simulator?.wait(timeout: 30) != nil else { throw FleetChaosError("\(name): coinsim did not finish: see \(dir)/coinsim-1.log") }
    }

    func request(_ command: String) throws -> JSON { try CoinMechConnection(path: socket).request(command) }

    func ledger() throws -> [LedgerEvent] { try Ledger(directory: "\(dir)/state").events(since: 0, limit: 100_000_000) }

    func stop() {
        for child in [bridge, daemon, simulator] {
            child?.signal(SIGKILL)
            _ = child?.wait(timeout: 10)
        }
    }

    private func launch(_ tool: String, _ arguments: [String]) throws -> ChildProcess {
        starts[tool, default: 0] += 1
        return try ChildProcess(path: "\(bin)/\(tool)", arguments, stderrPath: "\(dir)/\(tool)-\(starts[tool]!).log")
    }
}

struct FleetChaosError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
