import CLinux

#if canImport(Glibc)
import Glibc
#endif

/// What one wait of a simulator's loop found.
struct SimulatorWait: Sendable {
    /// The host wrote something.
    var readable: Bool
    /// Nobody has the device open (a pty reports this on every poll until someone does).
    var hungUp: Bool
    /// Someone has the device open.
    var open: Bool
    /// SIGTERM or SIGINT came (already read).
    var stop: Bool
}

/// SIGTERM and SIGINT as a descriptor (blocked for the thread, read through signalfd), and the
/// one wait a simulator's single-threaded loop makes: the pty, the signals, or the next due time.
final class SimulatorSignals {
    let descriptor: Int32

    init() throws(SimulatorError) {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        descriptor = cm_signalfd(&signals)
        guard descriptor >= 0 else { throw .system("signalfd", errno) }
    }

    deinit { close(descriptor) }

    /// Waits for the pty's `master`, a signal, or `wake` (CLOCK_MONOTONIC ns), whichever comes
    /// first. With no pty (the device is away) only a signal or the time can end the wait.
    func wait(master: Int32?, until wake: UInt64, now: UInt64) throws(SimulatorError) -> SimulatorWait {
        let left = wake > now ? wake - now : 0
        var timeout = timespec(tv_sec: Int(left / 1_000_000_000), tv_nsec: Int(left % 1_000_000_000))
        var fds = [pollfd(fd: master ?? -1, events: Int16(POLLIN), revents: 0), pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        let ready = cm_ppoll(&fds, 2, &timeout)
        if ready < 0 && errno != EINTR { throw .system("ppoll", errno) }
        var stop = false
        if fds[1].revents != 0 {
            var info = [UInt8](repeating: 0, count: 128)
            _ = read(descriptor, &info, info.count)
            stop = true
        }
        let events = fds[0].revents
        let readable = events & Int16(POLLIN) != 0
        let hangUp = events & Int16(POLLHUP) != 0
        guard master != nil else { return SimulatorWait(readable: false, hungUp: false, open: false, stop: stop) }
        return SimulatorWait(readable: readable, hungUp: hangUp && !readable, open: ready >= 0 && !hangUp, stop: stop)
    }
}
