import CLinux

#if canImport(Glibc)
import Glibc
#endif

/// What one thread of this process has had of the machine, seen from another thread: its CPU
/// time, and whether it is asleep in a call of its own, waiting for the disk, or ready to run.
/// A budget judged by the wall clock blames a call for a machine that was busy elsewhere (a
/// boot, a starved virtual machine, code paged in from a cold disk after a power cut); the
/// time its thread had is what its code can be blamed for.
public struct ThreadTime: Sendable {
    /// The thread's scheduling state, from `/proc/self/task/<tid>/stat`.
    public enum State: Sendable, Equatable {
        /// On a CPU, or ready and waiting for one (`R`).
        case runnable
        /// Asleep in a call it chose to make (`S`: a sleep, a lock, a socket, a pipe).
        case asleep
        /// In an uninterruptible wait (`D`, `I`): mostly the disk, such as a page of code read
        /// in on its first run. The kernel does not say which, and the machine is the likelier
        /// cause.
        case uninterruptible
        /// Stopped by a signal or a tracer (`T`, `t`).
        case stopped
    }

    /// The kernel's id of the thread (gettid).
    public let thread: Int32
    private let cpuClock: clockid_t

    /// The calling thread, for other threads to look at while it lives.
    public static func current() -> ThreadTime {
        ThreadTime(thread: cm_gettid(), cpuClock: cm_thread_cpu_clock())
    }

    private init(thread: Int32, cpuClock: clockid_t) {
        self.thread = thread
        self.cpuClock = cpuClock
    }

    /// CPU time the thread has used so far, in ns; nil if it cannot be read (the thread ended).
    public func cpuNanoseconds() -> UInt64? {
        let value = cm_clock_ns(cpuClock)
        return value == UInt64.max ? nil : value
    }

    /// Its state now; nil if it cannot be read (no such thread, an unknown letter).
    public func state() -> State? {
        let descriptor = open("/proc/self/task/\(thread)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return Self.state(ofStatLine: buffer[..<count])
    }

    /// The state letter of a stat line, "tid (name) S …": after the last ')', since a thread's
    /// name may itself hold one.
    static func state(ofStatLine line: ArraySlice<UInt8>) -> State? {
        guard let end = line.lastIndex(of: UInt8(ascii: ")")), end + 2 < line.endIndex else { return nil }
        switch line[end + 2] {
        case UInt8(ascii: "R"): return .runnable
        case UInt8(ascii: "S"): return .asleep
        case UInt8(ascii: "D"), UInt8(ascii: "I"): return .uninterruptible
        case UInt8(ascii: "T"), UInt8(ascii: "t"): return .stopped
        default: return nil
        }
    }
}
