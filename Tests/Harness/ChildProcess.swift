import CLinux
import Foundation
import Synchronization

/// A real child process (a daemon, a simulator, a tool), with its output captured: what the
/// end-to-end tests and the crash suite start.
///
/// Started as a service manager starts a daemon: every signal unblocked and at its default
/// action, whatever the starting thread had blocked (Foundation's `Process` passes the spawning
/// thread's mask on, which hid start-up signal races). Reaped on every path: `deinit` kills and
/// waits for a child still running, and a child dies with the process that started it even when
/// that crashes (PR_SET_PDEATHSIG from a spawner thread that lives as long as the process).
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `buffered` is touched only by the owner's thread (readLine/readToEnd); the
    // exit status is behind a Mutex.
    public let pid: pid_t
    /// Where standard error goes (appended).
    public let stderrPath: String
    private let stdoutRead: Int32
    private var buffered = Data()
    private let exit = Mutex<Int32?>(nil)

    /// Starts `path arguments…`; standard error is appended to `stderrPath`, standard output
    /// goes to a pipe read by `readLine`.
    public init(path: String, _ arguments: [String], environment: [String: String] = [:], stderrPath: String) throws {
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        self.stderrPath = stderrPath
        let stderrFD = open(stderrPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        let nullFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        var pipeFDs: [Int32] = [-1, -1]
        guard stderrFD >= 0, nullFD >= 0, cm_pipe_cloexec(&pipeFDs) == 0 else {
            throw SpawnError(path: path, errno: errno)
        }
        defer {
            close(stderrFD)
            close(nullFD)
            close(pipeFDs[1])
        }
        let spawned = ProcessSpawner.shared.spawn(path: path, arguments: [path] + arguments,
                                                  environment: env.map { "\($0.key)=\($0.value)" },
                                                  stdin: nullFD, stdout: pipeFDs[1], stderr: stderrFD)
        guard spawned.pid > 0 else {
            close(pipeFDs[0])
            throw SpawnError(path: path, errno: spawned.errno)
        }
        pid = spawned.pid
        stdoutRead = pipeFDs[0]
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            _ = wait(timeout: 30)
        }
        close(stdoutRead)
    }

    /// The next line of standard output, or nil at its end or after `timeout` seconds.
    public func readLine(timeout: Double = 10) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            var descriptor = pollfd(fd: stdoutRead, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) > 0 else { continue }
            guard let chunk = readChunk() else { return nil }
            buffered.append(chunk)
        }
        return nil
    }

    /// Everything left on standard output until the process closes it.
    public func readToEnd() -> Data {
        var all = buffered
        buffered.removeAll()
        while let chunk = readChunk() { all.append(chunk) }
        return all
    }

    private func readChunk() -> Data? {
        var bytes = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(stdoutRead, &bytes, bytes.count)
            if count > 0 { return Data(bytes[..<count]) }
            if count < 0 && errno == EINTR { continue }
            return nil
        }
    }

    /// What the child wrote on standard error.
    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    public func signal(_ number: Int32) {
        if isRunning { kill(pid, number) }
    }

    /// True until the process has exited (and been reaped here).
    public var isRunning: Bool { reap(blocking: false) == nil }

    /// The exit status once the process ended: its exit code, or 128 + the signal that killed
    /// it (as a shell reports it: 137 for SIGKILL, 143 for SIGTERM).
    public var exitStatus: Int32? { reap(blocking: false) }

    /// Waits up to `timeout` seconds; returns the exit status, or nil if it is still running.
    @discardableResult
    public func wait(timeout: Double = 30) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let status = reap(blocking: false) { return status }
            usleep(5_000)
        }
        return reap(blocking: false)
    }

    private func reap(blocking: Bool) -> Int32? {
        exit.withLock { exit in
            if let exit { return exit }
            var status: Int32 = 0
            let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
            guard result == pid else { return nil }
            let signal = status & 0x7f
            exit = signal == 0 ? (status >> 8) & 0xff : 128 + signal
            return exit
        }
    }
}

/// Why a child could not be started.
public struct SpawnError: Error, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    public var description: String { "cannot start \(path): \(String(cString: strerror(errno)))" }
}

/// Starts every child from one thread that lives as long as the test process, so that
/// PR_SET_PDEATHSIG (which fires when the spawning *thread* ends) kills children only when the
/// test process itself ends, crash or not.
final class ProcessSpawner: Sendable {
    static let shared = ProcessSpawner()

    private struct Request: @unchecked Sendable {
        // @unchecked: the pointers are built on the spawner thread from these values.
        let path: String
        let arguments: [String]
        let environment: [String]
        let stdin: Int32
        let stdout: Int32
        let stderr: Int32
        let done: @Sendable (pid_t, Int32) -> Void
    }

    private let queue = Mutex<[Request]>([])
    private let ready = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [self] in
            while true {
                ready.wait()
                guard let request = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                let pid = Self.spawnHere(request)
                request.done(pid, pid > 0 ? 0 : errno)
            }
        }
        thread.name = "child spawner"
        thread.start()
    }

    /// Starts a child on the spawner thread and waits for it to be started.
    func spawn(path: String, arguments: [String], environment: [String], stdin: Int32, stdout: Int32, stderr: Int32) -> (pid: pid_t, errno: Int32) {
        let result = Mutex<(pid_t, Int32)>((-1, 0))
        let finished = DispatchSemaphore(value: 0)
        queue.withLock {
            $0.append(Request(path: path, arguments: arguments, environment: environment, stdin: stdin, stdout: stdout, stderr: stderr) { pid, code in
                result.withLock { $0 = (pid, code) }
                finished.signal()
            })
        }
        ready.signal()
        finished.wait()
        return result.withLock { $0 }
    }

    private static func spawnHere(_ request: Request) -> pid_t {
        let argv = request.arguments.map { strdup($0) } + [nil]
        let envp = request.environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        return cm_spawn(request.path, argv, envp, request.stdin, request.stdout, request.stderr, -1, 1)
    }
}
