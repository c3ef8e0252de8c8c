import ArgumentParser
import CoinMechBridge
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `coinmech-bridge --config FILE`: publishes one cabinet's ledger to the fleet's broker until
/// SIGTERM or SIGINT (docs/FLEET.md).
@main
struct BridgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinmech-bridge",
        abstract: "Publish a cabinet's ledger events to the fleet's MQTT broker, each once at a consumer that acks (docs/FLEET.md).")

    @Option(help: "The configuration file.") var config = "/etc/coinmech/coinmech-bridge.yaml"
    @Flag(help: "Check the configuration and exit.") var checkConfig = false

    func run() throws {
        let configuration: BridgeConfiguration
        do {
            configuration = try BridgeConfiguration.load(path: config)
        } catch {
            FileHandle.standardError.write(Data("coinmech-bridge: \(error)\n".utf8))
            throw ExitCode(1)
        }
        if checkConfig {
            print("\(config): ok (cabinet \(configuration.cabinet), site \(configuration.site), broker \(configuration.mqtt.host):\(configuration.mqtt.port))")
            return
        }
        let bridge = Bridge(configuration: configuration) { level, message in
            // systemd's journal levels, as the daemon writes them.
            let priority = switch level { case .info: 6; case .notice: 5; case .warning: 4; case .error: 3 }
            FileHandle.standardError.write(Data("<\(priority)>coinmech-bridge: \(message)\n".utf8))
        }
        // SIGTERM and SIGINT end the loop; the bridge says `offline` and saves its cursor.
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { bridge.stop() }
            source.resume()
            sources.append(source)
        }
        do {
            try withExtendedLifetime(sources) { try bridge.run() }
        } catch {
            FileHandle.standardError.write(Data("coinmech-bridge: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
