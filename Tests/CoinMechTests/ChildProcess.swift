import Foundation
import Testing

/// A real child process of one of the package's executables, with its output captured.
final class ChildProcess: @unchecked Sendable {
    let process = Process()
    private let stdout = Pipe()
    let stderrPath: String
    private var buffered = Data()

    /// Starts `<bin dir>/<executable> arguments…`; standard error goes to a file.
    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], absolute: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: absolute ? executable : "\(TestSupport.binDirectory)/\(executable)")
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        stderrPath = "\(TestSupport.temporaryDirectory("stderr"))/\(URL(fileURLWithPath: executable).lastPathComponent).stderr"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.standardOutput = stdout
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
    }

    /// The next line of standard output, or nil at its end or after `timeout` seconds.
    func readLine(timeout: Double = 10) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            var descriptor = pollfd(fd: stdout.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) > 0 else { continue }
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            buffered.append(chunk)
        }
        return nil
    }

    /// Everything left on standard output until the process closes it.
    func readToEnd() -> Data {
        buffered + stdout.fileHandleForReading.readDataToEndOfFile()
    }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits up to `timeout` seconds; returns the exit status, or nil if it is still running.
    @discardableResult
    func wait(timeout: Double = 30) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
