import NIOCore
import NIOPosix
import Synchronization

/// Where the daemon's Swift concurrency runs: on the one NIO event loop thread that also serves
/// the socket, instead of libdispatch's thread pool.
///
/// On Linux, the first Dispatch worker thread starts libdispatch's workqueue monitor, a timer
/// that wakes its manager thread every second for as long as the process lives, and the pool's
/// workers are born for each burst of work and die 5 s after it. The daemon's async work (the
/// service group, signals, completions) is small, and its hot path has threads of its own, so
/// one event loop carries it all, and an idle daemon sleeps.
public enum DaemonExecutor {
    private static let installed = Atomic<Bool>(false)

    /// Installs the executor. Call once, from `main`, before any task exists; returns whether
    /// it took over (when not, Swift concurrency keeps its default pool and all still works).
    @discardableResult
    public static func install() -> Bool {
        NIOSingletons.groupLoopCountSuggestion = 1
        let took = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        installed.store(took, ordering: .sequentiallyConsistent)
        return took
    }

    /// The event loops for the socket server, and whether the caller owns them (shuts them down).
    /// The loop that runs Swift concurrency when the executor is installed, else a new one.
    static func socketEventLoops() -> (group: any EventLoopGroup, owned: Bool) {
        if installed.load(ordering: .sequentiallyConsistent) { return (MultiThreadedEventLoopGroup.singleton, false) }
        return (MultiThreadedEventLoopGroup(numberOfThreads: 1), true)
    }
}
