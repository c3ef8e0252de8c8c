import CoinMechModel
import CoinMechSerial
import Foundation

/// A tiny host for the simulator's tests (not the daemon): opens the device, answers readings
/// as `policy` says, reconnects after a hang-up, and records what it saw.
final class ScriptedHost {
    enum Answer {
        case accept(delayMs: Double = 0)
        case reject(delayMs: Double = 0)
        case ignore
    }

    let path: String
    var policy: (UInt64) -> Answer
    private(set) var readings: [UInt64] = []
    private(set) var statuses: [MechStatus] = []
    private(set) var parser = FrameParser()
    private(set) var reconnects = 0
    private var fd: Int32 = -1
    private var scheduled: [(due: Date, frame: SerialFrame)] = []

    init(path: String, policy: @escaping (UInt64) -> Answer = { _ in .accept() }) {
        self.path = path
        self.policy = policy
    }

    /// Runs until `until` returns true or `timeout` seconds pass; returns whether `until` held.
    @discardableResult
    func run(timeout: Double, until: () -> Bool = { false }) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if until() { return true }
            if fd < 0 {
                fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK)
                if fd < 0 {
                    usleep(20_000)
                    continue
                }
                var settings = termios()
                tcgetattr(fd, &settings)
                cfmakeraw(&settings)
                tcsetattr(fd, TCSANOW, &settings)
            }
            let now = Date()
            for item in scheduled where item.due <= now { send(item.frame) }
            scheduled.removeAll { $0.due <= now }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 5) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 {
                if count < 0 && errno == EAGAIN { continue }
                close(fd)  // hang-up (EIO): the device went away; reopen by path
                fd = -1
                reconnects += 1
                continue
            }
            parser.feed(buffer[..<count]) { event in
                guard case .frame(let frame) = event else { return }
                switch frame {
                case .reading(let reading):
                    let seq = reading.deviceSeq
                    readings.append(seq)
                    switch policy(seq) {
                    case .accept(let delay): schedule(.decision(deviceSeq: seq, accept: true), after: delay)
                    case .reject(let delay): schedule(.decision(deviceSeq: seq, accept: false), after: delay)
                    case .ignore: break
                    }
                case .status(let status, _):
                    statuses.append(status)
                default:
                    break
                }
            }
        }
        return until()
    }

    private func schedule(_ frame: SerialFrame, after delayMs: Double) {
        if delayMs <= 0 { send(frame) } else { scheduled.append((Date().addingTimeInterval(delayMs / 1000), frame)) }
    }

    private func send(_ frame: SerialFrame) {
        let bytes = frame.bytes
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    deinit { if fd >= 0 { close(fd) } }
}
