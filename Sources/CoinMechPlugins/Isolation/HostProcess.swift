import CLinux
import CSandbox
import CoinMechChain
import Foundation

/// One running plugin host: its pid, a pidfd that becomes readable when it exits, the daemon's
/// end of its channel, and the read end of its standard output and error.
final class HostProcess: @unchecked Sendable {
    // @unchecked: the descriptors are set once and closed in deinit; the supervisor, which reaps
    // the process, is the one that lets go of the last reference.
    let pid: pid_t
    let pidfd: Int32
    let channel: Int32
    let output: Int32
    /// Its CPU clock (every thread's time on a CPU), read by the supervisor's CPU watch.
    let cpuClock: clockid_t?
    /// Set once the process has been waited for.
    private(set) var exit: String?
    /// It ended the way the sandbox ends it: SIGSYS from the kernel, or the status the host's
    /// SIGSYS handler exits with after reporting the call.
    private(set) var endedBySandbox = false

    private init(pid: pid_t, pidfd: Int32, channel: Int32, output: Int32) {
        self.pid = pid
        self.pidfd = pidfd
        self.channel = channel
        self.output = output
        var clock = clockid_t()
        cpuClock = clock_getcpuclockid(pid, &clock) == 0 ? clock : nil
    }

    /// The CPU time its threads have used so far, in nanoseconds (nil once it is gone).
    var cpuNanoseconds: UInt64? {
        guard let cpuClock else { return nil }
        var now = timespec()
        guard clock_gettime(cpuClock, &now) == 0 else { return nil }
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    deinit {
        if exit == nil {
            Glibc.kill(pid, SIGKILL)
            _ = reap(blocking: true)
        }
        close(pidfd)
        close(channel)
        close(output)
    }

    /// Starts `executable` for link `link`, as `user` if given, from the calling thread (which
    /// must outlive the process: it gets SIGKILL when the thread ends).
    static func spawn(executable: String, link: String, user: HostUser?) throws(PluginLoadError) -> HostProcess {
        var pair: [Int32] = [-1, -1]
        guard cm_seqpacket_pair(&pair) == 0 else { throw .hostFailed(path: executable, message: "socketpair: \(String(cString: strerror(errno)))") }
        var pipe: [Int32] = [-1, -1]
        guard cm_pipe_cloexec(&pipe) == 0 else {
            close(pair[0])
            close(pair[1])
            throw .hostFailed(path: executable, message: "pipe: \(String(cString: strerror(errno)))")
        }
        var sandbox = cm_sandbox(channel_fd: pair[1], output_fd: pipe[1], uid: user?.uid ?? uid_t.max, gid: user?.gid ?? gid_t.max,
                                 kill_with_parent: 1)
        let arguments = [executable, "--link", link]
        // A minimal environment: the host needs nothing of the daemon's, except where its
        // libraries are when an install points there.
        let environment = ["LD_LIBRARY_PATH"].compactMap { key in ProcessInfo.processInfo.environment[key].map { "\(key)=\($0)" } }
            // The runtime's backtracer would start a process on a crash: the sandbox forbids it.
            + ["SWIFT_BACKTRACE=enable=no"]
        let pid = withCStrings(arguments) { argv in withCStrings(environment) { envp in cm_spawn_sandboxed(executable, argv, envp, &sandbox) } }
        let spawnError = errno
        close(pair[1])
        close(pipe[1])
        guard pid > 0 else {
            close(pair[0])
            close(pipe[0])
            let why = String(cString: strerror(spawnError))
            let hint = user != nil && spawnError == EPERM ? " (running it as '\(user!.name)' needs CAP_SETUID and CAP_SETGID)" : ""
            throw .hostFailed(path: executable, message: "cannot start \(executable): \(why)\(hint)")
        }
        let pidfd = cm_pidfd_open(pid)
        guard pidfd >= 0 else {
            Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            close(pair[0])
            close(pipe[0])
            throw .hostFailed(path: executable, message: "pidfd_open: \(String(cString: strerror(errno)))")
        }
        _ = fcntl(pipe[0], F_SETFL, fcntl(pipe[0], F_GETFL) | O_NONBLOCK)
        return HostProcess(pid: pid, pidfd: pidfd, channel: pair[0], output: pipe[0])
    }

    func kill() { Glibc.kill(pid, SIGKILL) }

    /// Waits for the process (without blocking unless asked); returns how it ended, once it has.
    func reap(blocking: Bool) -> String? {
        if let exit { return exit }
        var status: Int32 = 0
        var result: pid_t
        repeat {
            result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
        } while result < 0 && errno == EINTR
        guard result == pid else { return nil }
        let described = Self.describe(status)
        exit = described
        endedBySandbox = status & 0x7F == SIGSYS || (status & 0x7F == 0 && (status >> 8) & 0xFF == 128 + SIGSYS)
        return described
    }

    /// The forbidden call a violation message on the channel names, if one waits there
    /// (non-blocking; other messages are dropped: the host is gone).
    func pendingViolation() -> String? {
        var message = [UInt8](repeating: 0, count: 256)
        while true {
            var fd: Int32 = -1
            let count = message.withUnsafeMutableBytes { cm_recv_message(channel, $0.baseAddress, $0.count, &fd, 1) }
            if fd >= 0 { close(fd) }
            guard count > 0 else { return nil }
            if let call = message.withUnsafeBytes({ Self.forbiddenCall(in: UnsafeRawBufferPointer(rebasing: $0[..<count])) }) { return call }
        }
    }

    /// What the sandbox ended the host for when it could not say which call (killed by SIGSYS,
    /// or its report lost): nil if the sandbox did not end it.
    var unreportedViolation: String? { endedBySandbox ? "a call it could not report" : nil }

    /// The forbidden call a violation message names ("socket", "execve"…), if it is one.
    static func forbiddenCall(in message: UnsafeRawBufferPointer) -> String? {
        HostWire.violation(of: message).map { syscallName($0.syscall) }
    }

    /// "socket", "execve"… on this machine's architecture.
    static func syscallName(_ number: Int32) -> String {
        var name = [CChar](repeating: 0, count: 64)
        cm_sandbox_syscall_name(number, &name, name.count)
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// "killed by SIGSEGV", "exited with status 0".
    static func describe(_ status: Int32) -> String {
        let signal = status & 0x7F
        if signal == 0 { return "exited with status \((status >> 8) & 0xFF)" }
        return "killed by \(PluginBreadcrumb.signalName(signal))"
    }

    /// Whatever the host wrote on its output since the last call (non-blocking).
    func drainOutput() -> String {
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while collected.count < 64 * 1024 {
            let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            collected += chunk[..<count]
        }
        return String(decoding: collected, as: UTF8.self)
    }
}

/// Calls `body` with `strings` as a NULL-terminated C array, valid during the call.
public func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
