import CLinux
import Foundation

/// Runs one check in a child process of this executable under a watchdog: a plugin that
/// crashes or hangs fails the check, and the validator carries on with the next. The child
/// reports on a pipe of its own (descriptor `--report-fd`), so nothing the plugin prints can
/// pass for a result: "progress …" lines say where it is, one "result {json}" line ends it.
enum ChildRun {
    static func run(_ check: Check, plugin: String, configJSON: String, strictness: Int, seed: UInt64, budgetMilliseconds: Double,
                    timeout: Double) -> CheckResult {
        let started = cm_monotonic_ns()
        var result = spawnAndWait(check, plugin: plugin, configJSON: configJSON, strictness: strictness, seed: seed,
                                  budgetMilliseconds: budgetMilliseconds, timeout: timeout)
        result.milliseconds = Double(cm_monotonic_ns() &- started) / 1e6
        return result
    }

    private static func spawnAndWait(_ check: Check, plugin: String, configJSON: String, strictness: Int, seed: UInt64,
                                     budgetMilliseconds: Double, timeout: Double) -> CheckResult {
        func failed(_ finding: String) -> CheckResult { CheckResult(check: check, passed: false, findings: [finding], notes: []) }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var report: [Int32] = [-1, -1]
        guard cm_pipe_cloexec(&report) == 0 else { return failed("cannot make a pipe: \(String(cString: strerror(errno)))") }
        defer { close(report[0]) }
        let errorPath = "\(NSTemporaryDirectory())/coinmech-pluginval-\(getpid())-\(check.rawValue).stderr"
        defer { unlink(errorPath) }
        let errorFD = open(errorPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let nullFD = open("/dev/null", O_RDWR | O_CLOEXEC)
        let arguments = [executable, plugin, "--child", check.rawValue, "--config-json", configJSON, "--strictness", "\(strictness)",
                         "--seed", "\(seed)", "--budget-ms", "\(budgetMilliseconds)", "--report-fd", "\(report[1])"]
        // No Swift backtrace of a crashing plugin: slow, and the finding already says where it was.
        var variables = ProcessInfo.processInfo.environment
        variables["SWIFT_BACKTRACE"] = "enable=no"
        let environment = variables.map { "\($0.key)=\($0.value)" }
        let argv = arguments.map { strdup($0) } + [nil], envp = environment.map { strdup($0) } + [nil]
        let pid = cm_spawn(executable, argv, envp, nullFD, nullFD, errorFD, report[1], 0)
        argv.forEach { free($0) }
        envp.forEach { free($0) }
        close(report[1])
        close(errorFD)
        close(nullFD)
        guard pid > 0 else { return failed("cannot start a child process: \(String(cString: strerror(errno)))") }

        var progress = "starting"
        var outcome: CheckResult?
        var pending = Data()
        let deadline = cm_monotonic_ns() + UInt64(timeout * 1e9)
        var timedOut = false
        reading: while true {
            let now = cm_monotonic_ns()
            guard now < deadline else {
                timedOut = true
                kill(pid, SIGKILL)
                break
            }
            var descriptor = pollfd(fd: report[0], events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(clamping: (deadline - now) / 1_000_000 + 1)) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = read(report[0], &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break reading }
            pending.append(contentsOf: chunk[..<count])
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if line.hasPrefix("progress ") { progress = String(line.dropFirst(9)) }
                if line.hasPrefix("result ") { outcome = try? JSONDecoder().decode(CheckResult.self, from: Data(line.dropFirst(7).utf8)) }
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if timedOut { return failed("did not finish within \(Int(timeout)) s, while: \(progress) (a hang)") }
        let signal = status & 0x7F
        if signal != 0 {
            // A runtime's last words ("Fatal error: …"), if it left any.
            let said = (try? String(contentsOfFile: errorPath, encoding: .utf8))?.split(separator: "\n")
                .first { $0.contains("Fatal error") || $0.contains("Assertion") || $0.contains("error:") }.map { "; it said: \($0)" } ?? ""
            return failed("the plugin crashed the process (\(signalName(signal))) while: \(progress)\(said)")
        }
        return outcome ?? failed("the check's process ended (status \((status >> 8) & 0xFF)) without a result, while: \(progress)")
    }

    static func signalName(_ signal: Int32) -> String {
        [SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGILL: "SIGILL", SIGFPE: "SIGFPE", SIGABRT: "SIGABRT", SIGTRAP: "SIGTRAP", SIGKILL: "SIGKILL"][signal]
            ?? "signal \(signal)"
    }
}

/// The child's side of the report pipe.
struct ReportPipe {
    let descriptor: Int32

    func progress(_ text: String) { send("progress \(text.replacingOccurrences(of: "\n", with: " "))\n") }

    func result(_ result: CheckResult) {
        let json = (try? JSONEncoder().encode(result)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        send("result \(json)\n")
    }

    private func send(_ line: String) {
        let bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { return }
            offset += written
        }
    }
}
