import ArgumentParser
import CoinMechConfiguration
import CoinMechDaemon
import CoinMechPlugins
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

struct CoinMechDaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinmechd",
        abstract: "The CoinMech daemon: reads a coin mech, validates each coin through plugins, records every decision.",
        discussion: """
            coinmechd reads each coin from the mech the configuration names (a serial raw-sensor \
            mech, or a GPIO pulse or light-gate mech), decides it through the chain of validator \
            plugins, records the decision in the SQLite ledger before it tells the mech to accept \
            the coin, and publishes coins and totals to local clients as JSON lines on a Unix \
            socket (coinctl is one).

            Files, as the default configuration names them: /etc/coinmech/coinmechd.yaml (the \
            configuration), /usr/lib/coinmech/plugins (the plugins, writable by root only), \
            /var/lib/coinmech/ledger.sqlite3 (the ledger), /var/cache/coinmech (private copies of \
            the loaded plugins), /run/coinmech/coinmechd.sock (the client socket). The manual is \
            /usr/share/doc/coinmech (CONFIG.md, OPERATIONS.md, PLUGINS.md, PROTOCOL.md).

            Signals: SIGHUP re-reads the configuration and rebuilds the chain (systemctl reload \
            coinmechd); SIGTERM and SIGINT stop it after the batch in hand. Under systemd it \
            reports readiness, reloads and watchdog pings through $NOTIFY_SOCKET, and takes a \
            listening socket from coinmechd.socket.

            Exit status: 0 stopped cleanly (SIGTERM, SIGINT) or --check-config passed; 1 \
            configuration error; 2 the ledger or a directory could not be opened.
            """,
        version: Daemon.version)

    @Option(name: .long, help: "Configuration file.")
    var config = DaemonConfiguration.defaultPath

    @Flag(name: .long, help: "Check the configuration (and load every plugin of the chain), then exit.")
    var checkConfig = false

    @Option(name: .long, help: "Plugin directory, overriding plugin_dir in the configuration.")
    var pluginDir: String?

    @Option(name: .long, help: ArgumentHelp(
        "Show how each link of the configured chain judges a reading, then exit (nothing else starts).",
        valueName: "DIAMETER,WEIGHT[,THICKNESS[,LOW,HIGH[,PERMEABILITY]]]"))
    var explainReading: String?

    /// Parses the command line, then runs the daemon on the concurrency pool while the main
    /// thread waits in a semaphore, keeping the signals `LifecycleSignals` blocked. (An async
    /// `main` would end the main thread in libdispatch's `sigsuspend` with an empty mask, and a
    /// TERM delivered there kills the process by its default action.)
    static func mainKeepingSignalsBlocked() -> Never {
        let command: Self
        do {
            command = try parse()
        } catch {
            exit(withError: error)
        }
        // Swift concurrency on the socket's event loop, not libdispatch's pool (DaemonExecutor).
        DaemonExecutor.install()
        let finished = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                try await command.run()
            } catch {
                exit(withError: error)
            }
            finished.signal()
        }
        finished.wait()
        Glibc.exit(0)
    }

    func run() async throws {
        let configuration: DaemonConfiguration
        do {
            configuration = try DaemonConfiguration.load(path: config, pluginDirectory: pluginDir)
        } catch {
            Self.fail("\(error)", code: 1)
        }
        if let explainReading {
            LifecycleSignals.unblock()
            guard let reading = ReadingExplanation.reading(figures: explainReading) else {
                Self.fail("--explain-reading: '\(explainReading)' is not DIAMETER,WEIGHT[,THICKNESS[,LOW,HIGH[,PERMEABILITY]]]: mm, g, mm, then the alloy's conductivity in % IACS at the low and the high frequency and its relative permeability (e.g. 23.8,7.62,2.36)", code: 1)
            }
            do {
                print(ReadingExplanation(reading: reading, chain: try Daemon.buildChain(configuration, generation: 0, logger: nil)).text)
                return
            } catch {
                Self.fail("\(error)", code: 1)
            }
        }
        if checkConfig {
            // A short-lived check: TERM and INT end it at once, as for any command.
            LifecycleSignals.unblock()
            do {
                let chain = try Daemon.buildChain(configuration, generation: 0, logger: nil)
                print("\(config): configuration is valid; chain: \(chain.links.map { "\($0.name) (\($0.origin.plugin) \($0.origin.version))" }.joined(separator: " → "))")
                return
            } catch {
                Self.fail("\(error)", code: 1)
            }
        }
        LoggingSystem.bootstrap { label in JournalLogHandler(label: label, level: configuration.logLevel) }
        let logger = Logger(label: "coinmechd")
        let daemon: Daemon
        do {
            daemon = try Daemon(configuration: configuration, pluginDirectoryOverride: pluginDir, logger: logger)
        } catch {
            if case .configuration = error { Self.fail("\(error)", code: 1) }
            Self.fail("\(error)", code: 2)
        }
        do {
            try await daemon.run()
        } catch let error as DaemonError {
            Self.fail("\(error)", code: 2)
        }
    }

    static func fail(_ message: String, code: Int32) -> Never {
        FileHandle.standardError.write(Data("coinmechd: \(message)\n".utf8))
        Glibc.exit(code)
    }
}
