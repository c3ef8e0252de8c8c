import CoinMechModel
import CoinMechSupport
import Foundation
import Logging
import Synchronization

/// systemd's watchdog for the fleet (`WatchdogSec` in its unit): pinged at half of
/// `WATCHDOG_USEC`, only while the ingest's heartbeat is fresh. The ingest beats at every turn
/// of its loop, idle or not, and at every answer of a database call it retries (each within its
/// deadline): a database that is away keeps it beating, since restarting would not bring the
/// database back; an await that never returns stops it, and systemd restarts the fleet. So do
/// more stalled calls than `FleetDatabase.maxStranded`, each holding what it was given.
/// Also says `READY=1`, `STOPPING=1` and a `STATUS=` line a person can read.
public final class FleetWatchdog: Sendable {
    public let notifier: SystemdNotifier
    /// The ingest's last sign of life, monotonic nanoseconds.
    public let heartbeat = Atomic<UInt64>(Instant.now.nanoseconds)
    private let stopping = Atomic<Bool>(false)
    private let logger: Logger

    public init(notifier: SystemdNotifier = SystemdNotifier(), logger: Logger) {
        self.notifier = notifier
        self.logger = logger
    }

    public func beat() { heartbeat.store(Instant.now.nanoseconds, ordering: .relaxed) }

    /// Half the watchdog period (5 s for status lines alone).
    var intervalNanoseconds: UInt64 { (notifier.watchdogMicroseconds ?? 10_000_000) * 1000 / 2 }

    /// Pings and status lines from a thread of its own until `stop`; `healthy` says whether the
    /// process may still be vouched for, `status` the line to show.
    public func start(healthy: @escaping @Sendable () -> Bool, status: @escaping @Sendable () -> String) {
        guard notifier.isActive else { return }
        Thread {
            var lastStatus = "", silent = false
            while !self.stopping.load(ordering: .relaxed) {
                var message = ""
                if self.notifier.watchdogMicroseconds != nil {
                    let age = Instant.now.nanoseconds &- self.heartbeat.load(ordering: .relaxed)
                    if age < self.intervalNanoseconds && healthy() {
                        message += "WATCHDOG=1\n"
                        silent = false
                    } else if !silent {
                        silent = true
                        self.logger.critical("the ingest has not turned for \(age / 1_000_000) ms, or too many database calls are stranded: no more watchdog pings")
                    }
                }
                let line = status()
                if line != lastStatus {
                    message += "STATUS=\(line)\n"
                    lastStatus = line
                }
                if !message.isEmpty { self.notifier.notify(message) }
                var slept: UInt64 = 0
                while slept < min(self.intervalNanoseconds, 5_000_000_000), !self.stopping.load(ordering: .relaxed) {
                    usleep(100_000)
                    slept += 100_000_000
                }
            }
        }.start()
    }

    public func ready(_ status: String) { notifier.notify("READY=1\nSTATUS=\(status)") }

    public func stop() {
        stopping.store(true, ordering: .relaxed)
        notifier.notify("STOPPING=1\nSTATUS=stopping")
    }
}
