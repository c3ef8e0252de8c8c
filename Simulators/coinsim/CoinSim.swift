import ArgumentParser
import CoinMechSettings
import CoinMechGPIO
import CoinSimCore
import Foundation

@main
struct CoinSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinsim",
        abstract: "A coin mech on a pseudo-terminal: plays the device side of the serial protocol.",
        discussion: """
            coinsim prints the device path (e.g. /dev/pts/4) as its first line of output, waits \
            for a host to open it, announces power-up, then inserts coins as the scenario says. \
            At the end, or on SIGTERM, it writes the ground truth (JSON) to --truth or to \
            standard output. Point coinmechd's source.device (or --link) at it to run the daemon \
            without a mech:

                coinsim --scenario default --coins 20 --link /tmp/mech

            Scenarios are found by name in $COINSIM_SCENARIOS, then beside the installed \
            program (/usr/share/coinmech/scenarios: default, eur-mix, faults, burst, soak), or \
            given as a path to a .yaml file (/usr/share/doc/coinmech/SIMULATOR.md).

            Exit status: 0 done, 1 bad arguments or scenario, 2 system error, 3 no host came.
            """,
        subcommands: [Run.self, Replay.self, Edges.self],
        defaultSubcommand: Run.self)
}

struct SessionOptions: ParsableArguments {
    @Option(help: "Keep a symlink to the device here, updated when the device reappears.")
    var link: String?
    @Option(help: "Write the ground truth here (default: standard output).")
    var truth: String?
    @Option(help: "Record the session to this frame log (JSON lines) for `coinsim replay`.")
    var record: String?
    @Option(help: "Give up after this many seconds without a host (0: wait forever).")
    var hostTimeout: Double = 0
    @Option(help: "After the last coin (or SIGTERM), stay this long for late answers and the host's queries about coins it still waits on (ms).")
    var lingerMs: Double = 1500
    @Flag(help: "Insert each coin as soon as the previous one is answered (as fast as the protocol allows).")
    var lockstep = false

    var simulatorOptions: MechSimulator.Options {
        var options = MechSimulator.Options()
        options.linkPath = link
        options.recordPath = record
        options.hostTimeoutSeconds = hostTimeout
        options.lingerMilliseconds = lingerMs
        options.lockstep = lockstep
        return options
    }

    func finish(_ simulator: MechSimulator) throws {
        try play(simulator.run, ended: \.ended) { truth in
            let o = truth.outcomes
            return """
                \(truth.scenario): \(truth.sent.insertions) inserted, \(o.accepted) accepted (\(o.stored) stored, \(o.bounced) bounced, \
                \(o.powerLost) lost with the power), \(o.returned) returned, \(o.deadlineMisses) deadline misses, \(o.corrupted) corrupted, \
                \(o.inhibited) inhibited; \
                latency p50 \(truth.latencyUs.p50) µs p99 \(truth.latencyUs.p99) µs (\(truth.ended))
                """
        }
    }

    /// Runs a session: its truth goes to `--truth` or standard output, its summary to standard
    /// error. Exits 2 on a system error, 3 when no host came.
    func play<Truth: Encodable>(_ run: () throws(SimulatorError) -> Truth, ended: (Truth) -> String, summary: (Truth) -> String) throws {
        let truth: Truth
        do {
            truth = try run()
        } catch {
            FileHandle.standardError.write(Data("coinsim: \(error)\n".utf8))
            throw ExitCode(2)
        }
        try write(truth)
        FileHandle.standardError.write(Data("coinsim: \(summary(truth))\n".utf8))
        if let link { unlink(link) }
        if ended(truth) == "host_timeout" { throw ExitCode(3) }
    }

    /// Writes the ground truth to `--truth`, or to standard output.
    func write(_ truth: some Encodable) throws {
        let json = try truthEncoder().encode(truth)
        if let path = self.truth {
            try json.write(to: URL(fileURLWithPath: path), options: .atomic)
        } else {
            FileHandle.standardOutput.write(json + Data("\n".utf8))
        }
    }
}

extension CoinSim {
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Play a scenario (the default command).")

        @Option(help: "Scenario name (default, eur-mix, faults, burst, soak) or path to a .yaml file.")
        var scenario = "default"
        @Option(help: "Override the scenario's number of insertions (0: endless).")
        var coins: Int?
        @Option(help: "Override the scenario's seed.")
        var seed: UInt64?
        @Option(help: "Override the scenario's insertion rate (coins per second).")
        var rate: Double?
        @Option(name: .customLong("protocol"), help: "The line protocol: serial (the raw-sensor mech), cctalk (a ccTalk coin acceptor) or mdb (an MDB changer behind its adapter).")
        var lineProtocol: LineProtocol = .serial
        @OptionGroup var session: SessionOptions

        func run() throws {
            var loaded = try loadScenario(scenario)
            if let coins { loaded.coins = coins }
            if let seed { loaded.seed = seed }
            if let rate { loaded.ratePerSecond = rate }
            let announce: @Sendable (String) -> Void = { FileHandle.standardOutput.write(Data("\($0)\n".utf8)) }
            if lineProtocol == .cctalk {
                return try session.finishCCTalk(CCTalkSimulator(scenario: loaded, options: session.simulatorOptions, announce: announce))
            }
            if lineProtocol == .mdb {
                let simulator: MDBSimulator
                do {
                    simulator = try MDBSimulator(scenario: loaded, options: session.simulatorOptions, announce: announce)
                } catch {
                    FileHandle.standardError.write(Data("coinsim: \(error)\n".utf8))
                    throw ExitCode(1)
                }
                return try session.finishMDB(simulator)
            }
            let simulator = MechSimulator(scenario: loaded, options: session.simulatorOptions) { path in
                FileHandle.standardOutput.write(Data("\(path)\n".utf8))
            }
            try session.finish(simulator)
        }
    }

    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Play back a frame log recorded with --record.")

        @Argument(help: "The frame log.") var file: String
        @Option(help: "Deadline for the host's decisions (ms).") var deadlineMs: Double = 50
        @OptionGroup var session: SessionOptions

        func run() throws {
            let entries: [TraceEntry]
            do {
                entries = try readTrace(path: file)
            } catch {
                FileHandle.standardError.write(Data("coinsim: \(error)\n".utf8))
                throw ExitCode(1)
            }
            let simulator = MechSimulator(trace: entries, name: "replay:\(file)", deadlineMilliseconds: deadlineMs,
                                          options: session.simulatorOptions) { path in
                FileHandle.standardOutput.write(Data("\(path)\n".utf8))
            }
            try session.finish(simulator)
        }
    }
}

extension CoinSim {
    struct Edges: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the edge stream a pulse mech would produce for a scenario (for gpio-replay), and its ground truth.")

        @Option(help: "Scenario name or path.") var scenario = "default"
        @Option(help: "Insertions (default: the scenario's; 100 for endless ones).") var coins: Int?
        @Option(help: "Where to write the edge stream.") var out: String
        @Option(help: "Where to write the ground truth (JSON).") var truth: String?
        @Option(help: "The counting line's offset.") var line: UInt32 = 4
        @Flag(help: "Make every pulse edge bounce (0.4 ms blips), as worn contacts do.") var bounce = false
        @Flag(help: "A light-gate mech instead: two gates (lines 10 and 11, 50 mm apart) see every item.") var gates = false

        func run() throws {
            var loaded = try loadScenario(scenario)
            if let coins { loaded.coins = coins }
            let encoder = truthEncoder()
            if gates {
                let stream = GateStream(scenario: loaded)
                try EdgeStream.format(stream.edges).write(toFile: out, atomically: true, encoding: .utf8)
                if let truth { try encoder.encode(stream.items).write(to: URL(fileURLWithPath: truth)) }
                FileHandle.standardError.write(Data("coinsim: \(stream.items.count) items through the gates, \(stream.edges.count) edges → \(out)\n".utf8))
                return
            }
            let trains = PulseTrains(scenario: loaded, line: line, bounce: bounce)
            try EdgeStream.format(trains.edges).write(toFile: out, atomically: true, encoding: .utf8)
            if let truth { try encoder.encode(trains.truth).write(to: URL(fileURLWithPath: truth)) }
            FileHandle.standardError.write(Data("coinsim: \(trains.truth.trains) pulse trains, \(trains.edges.count) edges → \(out)\n".utf8))
        }
    }
}

/// A scenario by name or path; a missing or bad one is reported and exits 1.
func loadScenario(_ nameOrPath: String) throws -> Scenario {
    // The running file itself: argv[0] is only "coinsim" when it was found on PATH.
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    guard let path = ScenarioLocator.path(for: nameOrPath, executable: executable) else {
        let places = ScenarioLocator.searchDirectories(executable: executable).joined(separator: ", ")
        FileHandle.standardError.write(Data("coinsim: no scenario '\(nameOrPath)' (looked in \(places))\n".utf8))
        throw ExitCode(1)
    }
    do {
        return try Scenario.load(path: path)
    } catch {
        FileHandle.standardError.write(Data("coinsim: \(error)\n".utf8))
        throw ExitCode(1)
    }
}

/// How ground truth is written: snake_case keys, sorted, indented.
func truthEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.keyEncodingStrategy = .convertToSnakeCase
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    return encoder
}
