import ArgumentParser
import CoinMechFleet
import CoinMechFleetWeb
import Foundation
import Hummingbird
import HummingbirdBcrypt
import HummingbirdCore
import Logging
import ServiceLifecycle

/// `coinmech-fleet`: every cabinet's ledger from the broker into PostgreSQL, once, and the
/// dashboard over it (docs/FLEET.md).
@main
struct FleetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinmech-fleet",
        abstract: "Store every cabinet's ledger events from the fleet's MQTT broker in PostgreSQL, once each, and serve the fleet's dashboard (docs/FLEET.md).",
        subcommands: [Run.self, Migrate.self, SetOperator.self, Export.self],
        defaultSubcommand: Run.self)

    struct Options: ParsableArguments {
        @Option(help: "The configuration file.") var config = "/etc/coinmech/coinmech-fleet.yaml"

        func load() throws -> FleetConfiguration {
            do {
                return try FleetConfiguration.load(path: config)
            } catch {
                FileHandle.standardError.write(Data("coinmech-fleet: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
    }

    /// One logger for the process, to standard error (the journal under systemd).
    static func logger() -> Logger {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        return Logger(label: "coinmech-fleet")
    }

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Run the ingest and the dashboard until SIGTERM or SIGINT.")
        @OptionGroup var options: Options
        @Flag(help: "Check the configuration and exit.") var checkConfig = false

        func run() async throws {
            let c = try options.load()
            if checkConfig {
                print("\(options.config): ok (broker \(c.mqtt.host):\(c.mqtt.port), database \(c.database.name))")
                return
            }
            let logger = FleetCommand.logger()
            let store: FleetStore
            do { store = try FleetStore(c.database, logger: logger) } catch {
                logger.critical("\(error)")
                throw ExitCode(1)
            }
            let watchdog = FleetWatchdog(logger: logger)
            let figures = FleetFigures()
            let ingest = FleetIngest(configuration: c, store: store, logger: logger, outbox: CommandOutbox(), figures: figures, watchdog: watchdog)
            let ingestService = IngestService(ingest: ingest)
            let database = store.database
            watchdog.start(healthy: { database.stranded <= FleetDatabase.maxStranded }) {
                let f = figures.snapshot
                return "\(f.eventsStored) event(s) stored; broker \(f.brokerConnected ? "connected" : "away"); database \(f.databaseUp ? "up" : "away")\(f.inboxReading ? "" : "; inbox full")"
            }
            defer { watchdog.stop() }
            let databaseService = DatabaseService(database: store.database)
            // One group owns every lifetime: the database pool, the ingest and the dashboard;
            // SIGTERM or SIGINT stops them all, the dashboard first and the pool last, within
            // 10 s whatever a call in flight does (TimeoutStopSec is 20 s).
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: databaseService), .init(service: ingestService)]
            if let listen = c.httpListen {
                let router = FleetWeb.router(store: store, sessions: OperatorSessions(), outbox: ingest.outbox, figures: ingest.figures, instance: c.instance,
                                             settings: .init(trustedProxies: Set(c.http.trustedProxies)), logger: logger)
                // An idle connection, or one whose request never finishes its head, is closed;
                // at most max_connections are served at once.
                let app = Application(router: router, server: .http1(configuration: .init(idleTimeout: .nanoseconds(Int64(c.http.idleTimeoutSeconds * 1e9)))),
                                      configuration: .init(address: .hostname(listen.host, port: listen.port), serverName: "coinmech-fleet",
                                                           availableConnectionsDelegate: MaximumAvailableConnections(c.http.maxConnections)),
                                      onServerRunning: { channel in logger.info("dashboard on http://\(channel.localAddress?.description ?? "?")") },
                                      logger: logger)
                services.append(.init(service: app))
            }
            var group = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            group.maximumGracefulShutdownDuration = .seconds(7)
            group.maximumCancellationDuration = .seconds(2)
            try await ServiceGroup(configuration: group).run()
        }
    }

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Apply the database schema's steps not yet applied, and exit.")
        @OptionGroup var options: Options

        func run() async throws {
            let c = try options.load()
            let logger = FleetCommand.logger()
            let store = try FleetStore(c.database, logger: logger)
            try await withStore(store) {
                let applied = try await store.migrate()
                print(applied.isEmpty ? "the schema is up to date (\(FleetMigrations.steps.count) steps)" : "applied step(s) \(applied.map(String.init).joined(separator: ", "))")
            }
        }
    }

    struct SetOperator: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-operator",
            abstract: "Add an operator of the dashboard, or change one's password or role. The password is read from standard input.")
        @OptionGroup var options: Options
        @Argument(help: "The operator's name.") var name: String
        @Option(help: "operator or admin (an admin may send cabinets commands).") var role = "operator"
        @Option(help: "Read the password from this file instead of standard input.") var passwordFile: String?

        func run() async throws {
            guard role == "operator" || role == "admin" else { throw ValidationError("--role must be operator or admin, not '\(role)'") }
            guard !name.isEmpty, name.count <= 64 else { throw ValidationError("the name must be 1 to 64 characters") }
            let given = passwordFile.map { try? String(contentsOfFile: $0, encoding: .utf8) } ?? readLine(strippingNewline: true)
            guard let password = given?.trimmingCharacters(in: .newlines), password.count >= 8 else {
                throw ValidationError("give the password (at least 8 characters) on standard input or in --password-file")
            }
            let c = try options.load()
            let store = try FleetStore(c.database, logger: FleetCommand.logger())
            try await withStore(store) {
                _ = try await store.migrate()
                try await store.setOperator(name: name, passwordHash: Bcrypt.hash(password, cost: 12), role: role)
                print("operator \(name) (\(role)) saved")
            }
        }
    }
}

extension FleetCommand {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Export a cabinet's audit for a period from the fleet's database.", subcommands: [DEX.self])
    }

    /// `export dex`: one cabinet's EVA-DTS audit file (docs/FLEET.md, "DEX export").
    struct DEX: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dex",
            abstract: "Write one cabinet's EVA-DTS (DEX/UCS) audit for a period: from ≤ event time < to (UTC).")
        @OptionGroup var options: Options
        @Option(help: "The cabinet's id.") var cabinet: String
        @Option(help: "The period's start: 2026-11-01 (midnight UTC) or 2026-11-01T06:00:00Z.") var from: String
        @Option(help: "The period's end, not included.") var to: String
        @Option(help: "The currency (ISO 4217), when the cabinet's ledger holds several.") var currency: String?
        @Option(help: "Write the file here instead of standard output.") var output: String?

        func run() async throws {
            func fail(_ message: String) -> ExitCode {
                FileHandle.standardError.write(Data("coinmech-fleet export dex: \(message)\n".utf8))
                return ExitCode(1)
            }
            let period: ExportPeriod
            do { period = try ExportPeriod(from: from, to: to) } catch { throw fail(error.description) }
            if let currency, !DEXAudit.isCurrencyCode(currency) {
                throw fail("--currency '\(currency)' is not an ISO 4217 code such as USD")
            }
            let c = try options.load()
            let store: FleetStore
            // Standard output is the file: the pool's own complaints go to standard error.
            var logger = FleetCommand.logger()
            logger.logLevel = .error
            do { store = try FleetStore(c.database, logger: logger) } catch { throw fail("\(error)") }
            defer { store.database.shutdown() }
            let text: String
            do {
                guard let audit = try await store.dexAudit(cabinet: cabinet, from: period.from, to: period.to, currency: currency) else {
                    throw fail("the fleet has never heard of cabinet '\(cabinet)'")
                }
                text = try audit.file()
            } catch let exit as ExitCode {
                throw exit
            } catch let refused as DEXError {
                throw fail(refused.description)
            } catch {
                throw fail("cannot read the database \(c.database.name): \(FleetStore.reason(error))")
            }
            if let output {
                do { try text.write(toFile: output, atomically: true, encoding: .ascii) } catch { throw fail("cannot write \(output): \(error.localizedDescription)") }
            } else {
                FileHandle.standardOutput.write(Data(text.utf8))
            }
        }
    }
}

/// The ingest as a service of the group: cancelled at the graceful shutdown.
struct IngestService: Service {
    let ingest: FleetIngest
    func run() async throws {
        defer { ingest.watchdog.stop() }
        try await cancelWhenGracefulShutdown { try await ingest.run() }
    }
}

/// The database's pools as a service of the group: stopped at the graceful shutdown, without
/// waiting for a pool that cannot finish (`FleetDatabase`).
struct DatabaseService: Service {
    let database: FleetDatabase
    func run() async throws {
        try? await gracefulShutdown()
        database.shutdown()
    }
}

/// Runs `body` with the store's pool, then stops the pool.
func withStore(_ store: FleetStore, _ body: @Sendable () async throws -> Void) async throws {
    defer { store.database.shutdown() }
    try await body()
}
