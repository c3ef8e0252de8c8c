import CLinux
import Foundation

/// A child process of the crash suite (coinsim, coinmechd), started as a service manager
/// starts one: signals unblocked, at their default actions, killed if the suite dies.
final class Child {
    let pid: pid_t
    let name: String
    let logPath: String
    private let stdoutRead: Int32
    private var exitStatus: Int32?

    init(_ path: String, _ arguments: [String], environment: [String: String] = [:], log: String) throws {
        name = (path as NSString).lastPathComponent
        logPath = log
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        let logFD = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        let nullFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        var fds: [Int32] = [-1, -1]
        guard logFD >= 0, nullFD >= 0, cm_pipe_cloexec(&fds) == 0 else { throw CrashSuiteError("cannot set up \(path): \(String(cString: strerror(errno)))") }
        defer {
            close(logFD)
            close(nullFD)
            close(fds[1])
        }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // Spawned from the main thread, which lives as long as the suite: PR_SET_PDEATHSIG then
        // kills the child only when the suite itself ends.
        pid = cm_spawn(path, argv, envp, nullFD, fds[1], logFD, -1, 1)
        guard pid > 0 else {
            close(fds[0])
            throw CrashSuiteError("cannot start \(path): \(String(cString: strerror(errno)))")
        }
        stdoutRead = fds[0]
    }

    deinit {
        if running {
            kill(pid, SIGKILL)
            _ = wait(timeout: 30)
        }
        close(stdoutRead)
    }

    /// The first line the child writes on standard output (coinsim's device path).
    func firstLine(timeout: Double) -> String? {
        var line: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var descriptor = pollfd(fd: stdoutRead, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(stdoutRead, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }

    func signal(_ number: Int32) { if running { kill(pid, number) } }

    var running: Bool { reap() == nil }

    /// Exit code, or 128 + the signal that ended it.
    func wait(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let status = reap() { return status }
            usleep(5_000)
        }
        return reap()
    }

    private func reap() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let signal = status & 0x7f
        exitStatus = signal == 0 ? (status >> 8) & 0xff : 128 + signal
        return exitStatus
    }
}

struct CrashSuiteError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
