import ArgumentParser
import CoinMechBridge
import CoinMechSupport
import Foundation
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// `coinmech-bridge --config FILE`: publishes one cabinet's ledger to the fleet's broker until
/// SIGTERM or SIGINT (docs/FLEET.md).
@main
struct BridgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinmech-bridge",
        abstract: "Publish a cabinet's ledger events to the fleet's MQTT broker, each once at a consumer that acks (docs/FLEET.md).")

    @Option(help: "The configuration file.") var config = "/etc/coinmech/coinmech-bridge.yaml"
    @Flag(help: "Check the configuration and exit.") var checkConfig = false

    func run() async throws {
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
        let log: @Sendable (Bridge.Level, String) -> Void = { level, message in
            // systemd's journal levels, as the daemon writes them.
            let priority = switch level { case .info: 6; case .notice: 5; case .warning: 4; case .error: 3 }
            FileHandle.standardError.write(Data("<\(priority)>coinmech-bridge: \(message)\n".utf8))
        }
        // /metrics first: a port it cannot have stops the bridge before it says `online`.
        var metrics: MetricsServer?
        if let listen = configuration.metricsListen {
            do {
                metrics = try MetricsServer(host: listen.host, port: listen.port, idleTimeout: configuration.metricsIdleTimeout,
                                            maxConnections: configuration.metricsMaxConnections)
            } catch {
                FileHandle.standardError.write(Data("coinmech-bridge: \(error)\n".utf8))
                throw ExitCode(1)
            }
            log(.notice, "serving /metrics on \(metrics?.address ?? "?")")
        }
        let bridge = Bridge(configuration: configuration, metrics: metrics, log: log)
        // One group owns every lifetime, as in coinmechd and coinmech-fleet: SIGTERM or SIGINT
        // stops the bridge (it says `offline` and saves its cursor), then /metrics.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let metrics { services.append(.init(service: MetricsService(server: metrics))) }
        services.append(.init(service: BridgeService(bridge: bridge)))
        var group = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "coinmech-bridge"))
        group.maximumGracefulShutdownDuration = .seconds(8)
        do {
            try await ServiceGroup(configuration: group).run()
        } catch let error as BridgeError {
            FileHandle.standardError.write(Data("coinmech-bridge: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// The bridge's loop, on a thread of its own (it blocks on the daemon's socket), stopped at the
/// graceful shutdown; the group waits for its clean stop.
struct BridgeService: Service {
    let bridge: Bridge

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                Thread.startNamed("bridge") {
                    do throws(BridgeError) {
                        try bridge.run()
                        continuation.resume()
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        } onGracefulShutdown: {
            bridge.stop()
        }
    }
}

/// `/metrics`, served until the group shuts down.
struct MetricsService: Service {
    let server: MetricsServer

    func run() async throws {
        try? await gracefulShutdown()
        server.stop()
    }
}
