import CLinux

#if canImport(Glibc)
import Glibc
#endif

/// A pipe another thread writes a byte to, to wake a thread blocked in `poll` on `readEnd`:
/// the deciding loop, the reloader, a plugin host's supervisor. Close-on-exec: a plugin host
/// started meanwhile does not inherit it.
public final class WakePipe: @unchecked Sendable {
    // @unchecked: both descriptors are immutable after init; write(2) and read(2) on a pipe are
    // safe from any thread, and a wake lost to a full pipe is not lost (it is already readable).
    /// Poll this for `POLLIN`; `drain()` it after waking.
    public let readEnd: Int32
    private let writeEnd: Int32

    public init() {
        var fds: [Int32] = [-1, -1]
        _ = cm_pipe_cloexec(&fds)
        readEnd = fds[0]
        writeEnd = fds[1]
        _ = fcntl(readEnd, F_SETFL, O_NONBLOCK)
        _ = fcntl(writeEnd, F_SETFL, O_NONBLOCK)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Wakes the poller (a full pipe already means "wake up": nothing is lost).
    public func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    public func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &bytes, bytes.count) > 0 {}
    }
}
