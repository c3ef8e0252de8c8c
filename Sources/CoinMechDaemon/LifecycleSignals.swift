import CLinux
import CoinMechPlugins
import CoinMechSupport
import Foundation
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM, SIGINT and SIGHUP, blocked in every thread from the first line of `main` and read
/// from a signalfd once the daemon can act on them.
///
/// A signal's default action kills the process; a handler installed later leaves a window in
/// which it still does (a TERM soon after start used to end the daemon with status 143, and
/// systemd takes that for a clean stop). Blocked in the main thread before any other thread
/// exists, the signals are inherited blocked by every thread, so none is ever delivered: each
/// stays pending until `SignalService` reads it. A TERM during start-up is then a clean stop,
/// and a HUP a reload once the chain is loaded.
public enum LifecycleSignals {
    /// The signals the daemon handles itself.
    public static let handled: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    /// Blocks the handled signals in the calling thread (and so in every thread it starts).
    /// Call it first thing in `main`, before anything can start a thread.
    public static func blockBeforeAnyThreadStarts() {
        var set = mask()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Lets the handled signals act again (for short-lived modes such as `--check-config`).
    public static func unblock() {
        var set = mask()
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    static func mask() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in handled { sigaddset(&set, signal) }
        return set
    }
}

/// Reads the blocked lifecycle signals: TERM or INT ends `run()`, which shuts the service
/// group down gracefully (configure it with `successTerminationBehavior: .gracefullyShutdownGroup`);
/// HUP calls `onReload`. Signals that arrived while the daemon was starting are pending and
/// are read at once.
struct SignalService: Service {
    let onReload: @Sendable () -> Void
    let logger: Logger

    func run() async throws {
        let reader = SignalReader()
        defer { reader.stop() }
        for await signal in reader.signals.cancelOnGracefulShutdown() {
            switch signal {
            case SIGHUP:
                onReload()
            default:
                logger.notice("stopping", metadata: ["signal": "\(signal == SIGINT ? "SIGINT" : "SIGTERM")"])
                return
            }
        }
    }
}

/// A thread blocked in `poll` on a signalfd for the lifecycle signals, feeding an async stream.
final class SignalReader: Sendable {
    let signals: AsyncStream<Int32>
    private let wakePipe = WakePipe()

    init() {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        signals = stream
        var set = LifecycleSignals.mask()
        let descriptor = cm_signalfd(&set)
        precondition(descriptor >= 0, "signalfd failed: \(String(cString: strerror(errno)))")
        // The thread holds the pipe, so its descriptors outlive the poll.
        _ = Thread.startNamed("signals") { [wakePipe] in
            defer {
                close(descriptor)
                continuation.finish()
            }
            while true {
                var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0)]
                guard poll(&descriptors, 2, -1) >= 0 || errno == EINTR else { return }
                if descriptors[1].revents != 0 { return }
                while case let signal = cm_signalfd_read(descriptor), signal > 0 { continuation.yield(signal) }
            }
        }
    }

    /// Ends the reading thread and the stream.
    func stop() { wakePipe.wake() }
}
