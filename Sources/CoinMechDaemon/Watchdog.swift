import CoinMechModel
import CoinMechPlugins
import CoinMechSources
import CoinMechSupport
import Foundation
import Logging
import Synchronization

/// Pings systemd's watchdog at half of `WATCHDOG_USEC`, but only while the deciding loop's
/// own heartbeat is fresh: a stuck loop stops the pings, and systemd restarts the daemon.
/// Also refreshes `STATUS=` with a line a person can read.
final class Watchdog: @unchecked Sendable {
    // @unchecked: every stored property is a `let` of a Sendable value or a Sendable closure;
    // `stopping` is an Atomic. The thread `start()` makes is the only one that runs `run()`.
    private let notifier: SystemdNotifier
    private let loop: DecidingLoop
    private let status: @Sendable () -> String
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)

    init(notifier: SystemdNotifier, loop: DecidingLoop, logger: Logger, status: @escaping @Sendable () -> String) {
        self.notifier = notifier
        self.loop = loop
        self.logger = logger
        self.status = status
    }

    /// Half the watchdog period, or 5 s for status updates alone.
    var intervalNanoseconds: UInt64 { (notifier.watchdogMicroseconds ?? 10_000_000) * 1000 / 2 }

    func start() {
        guard notifier.isActive else { return }
        _ = Thread.startNamed("watchdog") { [self] in run() }
    }

    func stop() { stopping.store(true, ordering: .relaxed) }

    private func run() {
        var lastStatus = ""
        var silent = false
        while !stopping.load(ordering: .relaxed) {
            var message = ""
            if notifier.watchdogMicroseconds != nil {
                let age = Instant.now.nanoseconds &- loop.heartbeat.load(ordering: .relaxed)
                if age < intervalNanoseconds {
                    message += "WATCHDOG=1\n"
                    silent = false
                } else if !silent {
                    silent = true
                    logger.critical("the deciding loop has not turned for \(age / 1_000_000) ms: no more watchdog pings")
                }
            }
            let line = status()
            if line != lastStatus {
                message += "STATUS=\(line)\n"
                lastStatus = line
            }
            if !message.isEmpty { notifier.notify(message) }
            usleep(useconds_t(min(intervalNanoseconds / 1000, 5_000_000)))
        }
    }
}
