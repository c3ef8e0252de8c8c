import CoinMechChain
import CoinMechConfiguration
import CoinMechFailpoints
import CoinMechLedger
import CoinMechModel
import CoinMechPlugins
import CoinMechPublisher
import CoinMechSettings
import CoinMechSupport
import CoinMechTeach
import Foundation
import Logging
import NIOPosix
import ServiceLifecycle

/// Why the daemon could not start.
public enum DaemonError: Error, CustomStringConvertible, Sendable {
    case configuration(SettingsError)
    case ledger(LedgerError)
    case directory(String, String)
    case socket(String)
    case failpoints(String)

    public var description: String {
        switch self {
        case .configuration(let error): "\(error)"
        case .ledger(let error): "\(error)"
        case .directory(let path, let reason): "\(path): \(reason)"
        case .socket(let message): message
        case .failpoints(let message): message
        }
    }
}

/// The daemon wired together: ledger, chain, deciding loop, under one service group that
/// shuts down gracefully on SIGTERM and SIGINT.
public final class Daemon: Sendable {
    public static let version = "0.5.0"

    public let configuration: DaemonConfiguration
    public let ledger: Ledger
    public let chain: ChainHolder
    public let loop: DecidingLoop
    public let hub = EventHub()
    /// What every chain of this daemon is built into: breadcrumb, quarantine, alarm, logs.
    public let environment: ChainEnvironment
    private let hangWatch: HangWatch?
    private let logger: Logger
    private let started = Date()
    private let pluginDirectoryOverride: String?
    private let failpoints: Failpoints

    /// `pluginDirectoryOverride` is `--plugin-dir`, kept so reloads read the same directory.
    public init(configuration: DaemonConfiguration, pluginDirectoryOverride: String? = nil, logger: Logger) throws(DaemonError) {
        self.configuration = configuration
        self.pluginDirectoryOverride = pluginDirectoryOverride
        self.logger = logger
        do {
            failpoints = try Failpoints.fromEnvironment()
        } catch {
            throw .failpoints("\(error)")
        }
        if failpoints.isArmed { logger.warning("failpoints armed (testing only)", metadata: ["failpoints": "\(failpoints.description)"]) }
        for directory in [configuration.runtimeDirectory, configuration.stateDirectory, configuration.cacheDirectory] {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw .directory(directory, "cannot create: \(error.localizedDescription)")
            }
        }
        do throws(LedgerError) {
            let pages = configuration.ledgerMaxSizeMiB.map { Int($0 * 1024 * 1024 / 4096) }
            ledger = try Ledger(directory: configuration.stateDirectory, maximumPageCount: pages)
        } catch {
            throw .ledger(error)
        }
        let generation: UInt64
        do {
            // Generations continue across restarts, so a ledger entry's generation is unambiguous.
            generation = try ledger.chainGeneration() + 1
            // A taught calibration recorded but not yet in place when the daemon stopped goes in first.
            for note in CalibrationFiles.recover(try ledger.latestEvents(of: .teachCommit, limit: 16)) {
                logger.notice("teach mode: \(note)")
            }
        } catch {
            throw .ledger(error)
        }
        let environment = Self.pluginEnvironment(configuration, logger: logger)
        self.environment = environment
        let built = try Self.buildChain(configuration, generation: generation, logger: logger, environment: environment,
                                        quarantiningCreateCrashes: true)
        let holder = ChainHolder(built, retirement: ChainRetirement(), alarm: environment.alarm ?? PluginAlarm())
        chain = holder
        if let breadcrumb = environment.breadcrumb, let quarantine = environment.quarantine {
            hangWatch = HangWatch(breadcrumb: breadcrumb, chain: holder, quarantine: quarantine, logger: logger)
        } else {
            hangWatch = nil
        }
        do {
            loop = try DecidingLoop(configuration: configuration, chain: chain, ledger: ledger, hub: hub, logger: logger, failpoints: failpoints)
            // Copies of plugin versions no longer deployed would otherwise pile up across deploys.
            let pruned = PluginLoader(directory: configuration.pluginDirectory, runtimeDirectory: configuration.cacheDirectory)
                .pruneCopies(keeping: Set(built.links.map(\.origin.sha256)))
            if !pruned.isEmpty { logger.info("removed plugin copies no longer in use", metadata: ["count": "\(pruned.count)"]) }
            try ledger.append([.note(.startup(
                version: Self.version, chainGeneration: generation,
                links: built.links.map { "\($0.name)=\($0.origin.plugin)@\($0.origin.version)" }.joined(separator: ",")))])
        } catch {
            throw .ledger(error)
        }
    }

    /// "serial connected, 142 coins, chain gen 7" — for `STATUS=`.
    static func statusLine(loop: DecidingLoop, chain: ChainHolder) -> String {
        let status = loop.status
        let credited = UInt64(status.acceptor?.counts.credited ?? 0) + status.core.counters.credited
        var parts = ["mech \(status.connected ? "connected" : "disconnected")",
                     "\(credited) coins credited", "chain gen \(chain.current.generation)"]
        if status.core.inhibited { parts.append("inhibited") }
        if let reason = status.core.pluginInhibit { parts.append("INHIBITED: \(reason)") }
        if status.core.ledgerFailing { parts.append("LEDGER FAILING: returning all coins") }
        if let acceptor = status.acceptor {
            if acceptor.ledgerFailure != nil { parts.append("LEDGER FAILING: acceptor inhibited") }
            if acceptor.counts.lostEvents > 0 { parts.append("\(acceptor.counts.lostEvents) ACCEPTOR EVENTS LOST") }
            if acceptor.counts.lostReplies > 0 { parts.append("\(acceptor.counts.lostReplies) CHANGER REPLIES LOST") }
            if let fault = acceptor.device.acceptor?.fault { parts.append("ACCEPTOR FAULT: \(fault)") }
        }
        return parts.joined(separator: ", ")
    }

    /// Builds the configured chain; errors point at the configuration's lines. Tools build with the
    /// standalone environment; the daemon with its breadcrumb, quarantine and alarm.
    /// At start (`quarantiningCreateCrashes`), an isolated link whose host crashes creating its
    /// instance is quarantined rather than failing the start (`ChainBuilder.build`).
    public static func buildChain(_ configuration: DaemonConfiguration, generation: UInt64, logger: Logger?,
                                  environment: ChainEnvironment? = nil, quarantiningCreateCrashes: Bool = false) throws(DaemonError) -> Chain {
        let loader = PluginLoader(directory: configuration.pluginDirectory, runtimeDirectory: configuration.cacheDirectory)
        var environment = environment ?? ChainEnvironment(isolation: configuration.plugins.supervision)
        environment.acceptPolicy = AcceptPolicy(coins: configuration.source.coins)
        environment.currenciesFromChain = !configuration.source.currenciesConfigured
        if environment.breadcrumb == nil, let logger {
            environment.log = pluginLog(logger)
            environment.report = linkReport(logger)
        }
        do throws(ChainBuildError) {
            return try ChainBuilder(loader: loader, environment: environment).build(
                generation: generation, links: configuration.chain.map(\.spec), quarantiningCreateCrashes: quarantiningCreateCrashes) { warning in
                logger?.warning("\(warning)")
            }
        } catch {
            throw .configuration(configuration.settingsError(for: error))
        }
    }

    /// Runs until SIGTERM or SIGINT, then finishes the reading in hand and records the shutdown.
    public func run() async throws {
        let (eventLoops, ownsEventLoops) = DaemonExecutor.socketEventLoops()
        // Ledger reads and user lookups for clients: one thread, so no event loop ever blocks.
        let blocking = NIOThreadPool(numberOfThreads: 1)
        blocking.start()
        // The threads the socket and the chain run on, closed after every part that uses them.
        let holder = chain
        let threads = LifetimeService(name: "threads", start: {}, stop: { [logger] in
            if await !Self.stopRetiring(holder) {
                logger.warning("a replaced chain's plugin did not finish its destroy within 5 s: stopping without it")
            }
            try? await blocking.shutdownGracefully()
            if ownsEventLoops { try? await eventLoops.shutdownGracefully() }
        })
        let policy = AccessPolicy(users: configuration.socket.controlUsers, groups: configuration.socket.controlGroups)
        for name in policy.unknownNames { logger.warning("socket control access names an unknown \(name)") }
        let notifier = SystemdNotifier()
        if let watchdog = notifier.watchdogMicroseconds {
            // A quarter of the watchdog period: the watchdog thread pings at half of it if the
            // loop's heartbeat is younger than that. No cap at 1 s: with WatchdogSec=10s an idle
            // loop wakes every 2.5 s, not every second.
            loop.heartbeatMilliseconds = Int32(clamping: max(10, watchdog / 4000))
        }
        let reloader = Reloader(configPath: configuration.file, pluginDirectoryOverride: pluginDirectoryOverride, running: configuration,
                                holder: chain, loop: loop, environment: environment, notifier: notifier, logger: logger)
        let control = DaemonControl(configuration: configuration, loop: loop, chainHolder: chain, ledger: ledger, reloader: reloader, started: started)
        let server: SocketServer
        do throws(SocketServerError) {
            server = try await SocketServer.listen(
                path: configuration.socket.path, mode: configuration.socket.mode, groupName: configuration.socket.group,
                inheritedDescriptor: SocketServer.socketFromSystemd(),
                context: PublisherContext(
                    ledger: ledger, control: control, hub: hub, policy: policy, daemonVersion: Self.version,
                    maximumQueuedEvents: configuration.socket.maxQueuedEvents,
                    limits: ClientLimits(maximumClients: configuration.socket.maxClients,
                                         idleTimeout: .nanoseconds(Int64(configuration.socket.idleTimeoutSeconds * 1e9)),
                                         stallTimeout: .nanoseconds(Int64(configuration.socket.idleTimeoutSeconds * 1e9))),
                    logger: logger, blocking: blocking),
                on: eventLoops)
        } catch {
            // The group that owns the threads never ran: close them as it would have.
            await threads.stop()
            throw DaemonError.socket(error.message)
        }
        logger.notice("listening", metadata: ["socket": "\(server.path)", "activated": "\(server.activated)"])
        failpoints.hit(.listening)
        let watchdog = Watchdog(notifier: notifier, loop: loop, logger: logger) { [loop, chain] in
            Self.statusLine(loop: loop, chain: chain)
        }
        let hangWatch = self.hangWatch
        // One group owns every long-lived part. A graceful shutdown runs in the reverse order of
        // this list: deciding stops (the batch in hand, the shutdown record) while the socket,
        // the reloader and the watchdog are still up; TERM or INT end the signal service, which
        // starts it. The threads go last, when nothing uses them any more. A part that ends or
        // fails shuts the group down the same way, in the same order (never by cancelling it:
        // the threads would close while deciding still finishes its batch); nothing cancels the
        // group from outside.
        let services: [any Service] = [
            threads,
            LifetimeService(name: "socket server", start: {}, stop: { await server.close() }),
            LifetimeService(name: "reloader", start: { reloader.start() }, stop: { reloader.stop() }),
            LifetimeService(name: "watchdog", start: { watchdog.start() }, stop: { watchdog.stop() }),
            LifetimeService(name: "hang watch", start: { hangWatch?.start() }, stop: { hangWatch?.stop() }),
            DecidingService(loop: loop, notifier: notifier, hangWatch: hangWatch),
            SignalService(onReload: { reloader.request(reason: "SIGHUP") }, logger: logger),
        ]
        let group = ServiceGroup(
            configuration: .init(
                services: services.map {
                    .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                logger: logger))
        // The ledger is open, the chain built, the socket listening: ready.
        notifier.notify("READY=1\nSTATUS=\(Self.statusLine(loop: loop, chain: chain))")
        defer { logger.notice("stopped") }
        try await group.run()
    }

    /// Ends the chain's retirement thread off the cooperative pool (it waits for the thread,
    /// for a few seconds at most); whether it ended in time.
    private static func stopRetiring(_ holder: ChainHolder) async -> Bool {
        await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            _ = Thread.startNamed("stop retiring") {
                done.resume(returning: holder.stopRetiring())
            }
        }
    }
}

/// A part with a thread or a socket of its own (the socket server, the reloader, the watchdog)
/// as a service of the group: started when the group runs, stopped when it shuts down or is
/// cancelled.
struct LifetimeService: Service, CustomStringConvertible {
    let name: String
    let start: @Sendable () -> Void
    let stop: @Sendable () async -> Void

    var description: String { name }

    func run() async throws {
        start()
        // Returns at graceful shutdown, and when the group is cancelled (the error is dropped):
        // either way the part stops.
        try? await gracefulShutdown()
        await stop()
    }
}

/// Runs the deciding loop on its own thread: its poll loop must never wait on the
/// cooperative thread pool, and nothing else may ever wait on it.
struct DecidingService: Service {
    let loop: DecidingLoop
    let notifier: SystemdNotifier
    let hangWatch: HangWatch?

    func run() async throws {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    _ = Thread.startNamed("deciding") { [loop, hangWatch] in
                        // A crash in a link's validate is recorded from this thread's breadcrumb slot.
                        PluginBreadcrumb.bindDecidingThread()
                        hangWatch?.watchDecidingThread()
                        loop.run()
                        continuation.resume()
                    }
                }
            } onGracefulShutdown: {
                notifier.notify("STOPPING=1\nSTATUS=stopping")
                loop.stop()
            }
        } onCancel: {
            // Cancelled (another service failed): finish the reading in hand and stop all the same.
            loop.stop()
        }
    }
}
