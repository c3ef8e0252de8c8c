import CLinux
import CoinMechCCTalk
import CoinMechModel
import CoinMechSources
import CoinMechSupport
@testable import CoinMechTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small driver for tests: a `CCTalkHost` on a real serial device (coinsim's pty), the way
/// the daemon will drive one. It polls the descriptor with the host's next wake as timeout,
/// reads before it runs timers, writes what the host sends, and commits every batch to a
/// `CCTalkTestLedger` (a refused batch goes back to the host).
final class CCTalkPTYHost {
    let path: String
    let configuration: CCTalkHostConfiguration
    private(set) var host: CCTalkHost
    private(set) var ledger: CCTalkTestLedger
    private(set) var events: [CCTalkHostEvent] = []
    private var port: SerialPort?
    private var started = false

    init(path: String, configuration: CCTalkHostConfiguration = CCTalkHostConfiguration(), ledger: CCTalkTestLedger = CCTalkTestLedger()) {
        self.path = path
        self.configuration = configuration
        self.ledger = ledger
        host = CCTalkHost(configuration: configuration, persisted: ledger.state)
    }


    /// Drives the host until `condition` holds or `timeout` seconds pass; false on timeout or
    /// when the device goes away.
    @discardableResult
    func run(timeout: Double, until condition: (CCTalkPTYHost) -> Bool = { _ in false }) throws -> Bool {
        try open()
        if !started {
            started = true
            apply(host.start(now: Instant.now.nanoseconds))
        }
        let end = Instant.now.nanoseconds + UInt64(timeout * 1e9)
        while Instant.now.nanoseconds < end {
            if condition(self) { return true }
            guard let port else { return false }
            let now = Instant.now.nanoseconds
            let wake = min(host.nextWake ?? end, end)
            var descriptor = pollfd(fd: port.descriptor, events: Int16(POLLIN), revents: 0)
            let waitMs = Int32(clamping: wake > now ? (wake - now + 999_999) / 1_000_000 : 0)
            _ = poll(&descriptor, 1, min(waitMs, 50))
            switch port.read() {
            case .bytes(let bytes): apply(host.received(bytes, at: Instant.now.nanoseconds))
            case .hangUp: return condition(self)
            case .nothing: if descriptor.revents & Int16(POLLHUP) != 0 { return condition(self) }
            }
            apply(host.tick(now: Instant.now.nanoseconds))
        }
        return condition(self)
    }

    /// Opens the device and says nothing yet: with `stall`, a daemon slow to its first poll.
    func open() throws {
        if port == nil { port = try SerialPort(path: path, baud: configuration.baud) }
    }

    /// The daemon stalls (SIGSTOP, a slow disk): nothing read, nothing polled.
    func stall(seconds: Double) { usleep(UInt32(seconds * 1e6)) }

    /// The daemon restarts: the port is closed and opened again, and a new host starts from
    /// what the ledger holds.
    func restart() {
        port = nil
        started = false
        host = CCTalkHost(configuration: configuration, persisted: ledger.state)
    }

    private func apply(_ outputs: [CCTalkHostOutput]) {
        for output in outputs {
            switch output {
            case .send(let bytes):
                _ = port?.write(bytes, timeoutMilliseconds: 100)
            case .event(let event):
                events.append(event)
                if case .batch(let batch) = event, !ledger.commit(batch) {
                    if ledger.failing { host.notRecorded(batch) } else { host.rewind(to: ledger.state) }
                }
            }
        }
    }
}
