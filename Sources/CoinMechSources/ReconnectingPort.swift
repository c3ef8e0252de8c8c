import CoinMechHotplug
import CoinMechModel
import CoinMechSupport

/// The serial port of a device shell that polls its device (a ccTalk acceptor, an MDB
/// adapter): opened when due, and after a failure or a loss tried again with a backoff from
/// 100 ms to 2 s; what it reads comes whole, everything waiting at once, with the loss if the
/// line went away. Owned by the deciding loop's thread; not thread-safe.
final class ReconnectingPort {
    let path: String
    let baud: Int
    private var port: SerialPort?
    private var nextAttempt = Instant(nanoseconds: 0)
    private var backoff: Duration = .milliseconds(100)
    private var lastOpenError: String?

    init(path: String, baud: Int) {
        self.path = path
        self.baud = baud
    }

    var descriptor: Int32? { port?.descriptor }
    var isOpen: Bool { port != nil }
    /// Why the last attempt to open it failed, while closed.
    var disconnectedReason: String? { port == nil ? lastOpenError : nil }
    /// When it is next tried, while closed.
    var nextAttemptTime: Instant? { port == nil ? nextAttempt : nil }

    /// Opens the port if it is closed and due; true when it has just opened.
    func openIfDue(now: Instant) -> Bool {
        guard port == nil, now >= nextAttempt else { return false }
        do throws(SerialPortError) {
            port = try SerialPort(path: path, baud: baud)
            backoff = .milliseconds(100)
            lastOpenError = nil
            return true
        } catch {
            lastOpenError = error.description
            nextAttempt = now + backoff
            backoff = min(backoff * 2, .seconds(2))
            return false
        }
    }

    /// Everything waiting on the line, and why it was lost if it was (`hungUp`: poll said so).
    func readAll(hungUp: Bool) -> (bytes: [UInt8], lost: String?) {
        guard let port else { return ([], nil) }
        var bytes: [UInt8] = []
        while true {
            switch port.read() {
            case .nothing: return (bytes, hungUp ? "hang-up" : nil)
            case .hangUp(let reason): return (bytes, reason)
            case .bytes(let more): bytes += more
            }
        }
    }

    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool { port?.write(bytes) ?? false }

    /// What udev says, for the shell that owns this port: gone, the shell `disconnect`s (its
    /// last words to the device first); back, it is tried now, with the backoff from its start,
    /// by the shell's `poll`.
    func hotplug(_ change: HotplugTracker.Change, now: Instant, disconnect: (String) -> [MechEvent], poll: () -> [MechEvent]) -> [MechEvent] {
        switch change {
        case .vanished:
            return disconnect("device removed")
        case .appeared:
            nextAttempt = now
            backoff = .milliseconds(100)
            return poll()
        }
    }

    /// Writes `last` (what leaves the device safe while nobody polls it), closes the port, and
    /// tries it again after the backoff.
    func close(now: Instant, last: [UInt8]) {
        guard let port else { return }
        if !last.isEmpty { _ = port.write(last) }
        self.port = nil
        nextAttempt = now + backoff
    }
}
