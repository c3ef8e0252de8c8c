import CLinux
import CoinMechChain
import CoinMechConfiguration
import CoinMechPlugins
import CoinMechProtocol
import CoinMechPublisher
import CoinMechSupport
import Foundation
import Logging
import Synchronization

/// Rebuilds the chain when asked (SIGHUP, the socket's `reload`) or when the plugin directory
/// or the configuration file changes (inotify, debounced). It builds the new chain on its own
/// thread, completely, off to the side; the deciding loop then swaps it in between two
/// batches and records the outcome. Deciding never waits on a reload, and any failure keeps
/// the old chain deciding.
public final class Reloader: @unchecked Sendable {
    // @unchecked: `inotify` is set in `init`; `thread` and `lastGeneration` are written by
    // `start()` before the reloader's thread exists and afterwards only by that thread; other threads use
    // `request()` (a Mutex) and `stop()` (an Atomic and the wake pipe).
    public typealias Completion = @Sendable (Result<JSON, CommandError>) -> Void

    private let configPath: String
    private let pluginDirectoryOverride: String?
    private let running: DaemonConfiguration
    private let holder: ChainHolder
    private let loop: DecidingLoop
    private let environment: ChainEnvironment
    private let notifier: SystemdNotifier
    private let logger: Logger
    private let requests = Mutex<[(reason: String, completion: Completion?)]>([])
    private let stopping = Atomic<Bool>(false)
    private let wakePipe = WakePipe()
    private let inotify: Int32
    private var thread: Thread?
    /// The last generation handed out: a reload built while the previous one still waits to be
    /// installed must not get the same number (the reloader's thread alone touches it).
    private var lastGeneration: UInt64 = 0
    /// Quiet time after the last file event before reloading (editors and copies write in bursts).
    static let debounceNanoseconds: UInt64 = 300_000_000

    public init(configPath: String, pluginDirectoryOverride: String?, running: DaemonConfiguration, holder: ChainHolder,
                loop: DecidingLoop, environment: ChainEnvironment, notifier: SystemdNotifier = SystemdNotifier(environment: [:]), logger: Logger) {
        self.environment = environment
        self.notifier = notifier
        self.configPath = configPath
        self.pluginDirectoryOverride = pluginDirectoryOverride
        self.running = running
        self.holder = holder
        self.loop = loop
        self.logger = logger
        // Watch from here, before the socket exists: a plugin deployed while the daemon starts
        // (the moment a client can first connect) is seen, not lost to a watch added later.
        inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ATTRIB)
        let configDirectory = (configPath as NSString).deletingLastPathComponent
        for directory in Set([running.pluginDirectory, configDirectory.isEmpty ? "." : configDirectory]) {
            if inotify_add_watch(inotify, directory, mask) < 0 {
                logger.warning("cannot watch for changes", metadata: ["directory": "\(directory)", "error": "\(String(cString: strerror(errno)))"])
            }
        }
    }

    deinit {
        if inotify >= 0 { close(inotify) }
    }

    /// Asks for a reload; `completion` gets the outcome.
    public func request(reason: String, completion: Completion? = nil) {
        requests.withLock { $0.append((reason, completion)) }
        wakePipe.wake()
    }

    /// Starts watching and serving requests on a thread of its own.
    public func start() {
        thread = Thread.startNamed("reloader") { [self] in run() }
    }

    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        wakePipe.wake()
    }

    private func run() {
        var changedSince: UInt64?
        var firstChange: UInt64 = 0
        while !stopping.load(ordering: .sequentiallyConsistent) {
            var descriptors = [pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0), pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)]
            var timeout: Int32 = -1
            if let since = changedSince {
                let now = cm_monotonic_ns()
                let due = min(since + Self.debounceNanoseconds, firstChange + 4 * Self.debounceNanoseconds)
                timeout = due > now ? Int32((due - now) / 1_000_000) + 1 : 0
            }
            _ = poll(&descriptors, 2, timeout)
            if descriptors[0].revents != 0 { wakePipe.drain() }
            if descriptors[1].revents != 0, relevantChange() {
                let now = cm_monotonic_ns()
                if changedSince == nil { firstChange = now }
                changedSince = now
            }
            var batch = requests.withLock { queued in defer { queued.removeAll() }; return queued }
            if let since = changedSince {
                let now = cm_monotonic_ns()
                if now >= since + Self.debounceNanoseconds || now >= firstChange + 4 * Self.debounceNanoseconds {
                    changedSince = nil
                    batch.append(("files changed", nil))
                }
            }
            guard !batch.isEmpty, !stopping.load(ordering: .sequentiallyConsistent) else { continue }
            // Requests that arrived together share one reload.
            let reason = batch.map(\.reason).joined(separator: ", ")
            let completions = batch.compactMap(\.completion)
            reload(reason: reason) { result in completions.forEach { $0(result) } }
        }
    }

    /// Reads inotify events; true if one concerns the plugin directory or the configuration file.
    private func relevantChange() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8192)
        var relevant = false
        let configName = (configPath as NSString).lastPathComponent
        while true {
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            guard count > 0 else { return relevant }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let (length, nameStart) = buffer.withUnsafeBytes { raw -> (Int, Int) in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (Int(event.len), offset + MemoryLayout<inotify_event>.size)
                }
                let nameBytes = buffer[nameStart..<min(count, nameStart + length)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                // The plugin directory's .so files, or the configuration file (editors rename into place).
                if name.hasSuffix(".so") || name == configName { relevant = true }
                offset = nameStart + length
            }
        }
    }

    /// Builds the new chain from the configuration as it is now, and hands it to the loop.
    private func reload(reason: String, completion outcome: @escaping Completion) {
        logger.notice("reloading the chain", metadata: ["reason": "\(reason)"])
        notifier.notify("RELOADING=1\nMONOTONIC_USEC=\(SystemdNotifier.monotonicMicroseconds())\nSTATUS=reloading the chain")
        let notifier = notifier
        let completion: Completion = { result in
            notifier.notify("READY=1")
            outcome(result)
        }
        let configuration: DaemonConfiguration
        do {
            configuration = try DaemonConfiguration.load(path: configPath, pluginDirectory: pluginDirectoryOverride)
        } catch {
            return fail("\(error)", completion)
        }
        if configuration.source != running.source || configuration.socket != running.socket
            || configuration.stateDirectory != running.stateDirectory || configuration.pluginDirectory != running.pluginDirectory {
            logger.warning("only the chain is reloaded; source, socket and directory changes take effect at the next restart")
        }
        lastGeneration = max(lastGeneration, holder.current.generation) + 1
        let generation = lastGeneration
        let chain: Chain
        do {
            var environment = environment
            environment.isolation = configuration.plugins.supervision
            chain = try Daemon.buildChain(configuration, generation: generation, logger: logger, environment: environment)
        } catch {
            return fail("\(error)", completion)
        }
        loop.submit(.install(chain, completion: completion))
    }

    private func fail(_ reason: String, _ completion: @escaping Completion) {
        logger.error("reload failed; the current chain keeps deciding", metadata: ["reason": "\(reason)"])
        loop.submit(.reloadFailed(reason: reason, completion: completion))
    }
}
