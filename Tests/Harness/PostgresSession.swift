import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A psql session a test keeps open between its steps: a transaction, and the locks it takes,
/// held while the test does other things. Statements go in through a FIFO as the test writes
/// them; psql's rows (unaligned, tuples only) come out as lines.
public final class PostgresSession {
    private let child: ChildProcess
    private var input: Int32

    init(socketDirectory: String, port: Int, database: String) throws(PostgresError) {
        let fifo = "\(socketDirectory)/session-\(UUID().uuidString.prefix(8)).fifo"
        guard mkfifo(fifo, 0o600) == 0 else { throw PostgresError("mkfifo \(fifo): \(String(cString: strerror(errno)))") }
        do {
            child = try ChildProcess(path: "/bin/sh", ["-c", "exec /usr/bin/psql -X -q -h \(socketDirectory) -p \(port) -U postgres -d \(database) -At -v ON_ERROR_STOP=1 < \(fifo)"],
                                     stderrPath: "\(fifo).log")
        } catch {
            throw PostgresError("cannot start psql: \(error)")
        }
        // Not blocking: the open fails (ENXIO) until psql's shell has the FIFO open to read.
        let deadline = Date().addingTimeInterval(20)
        var descriptor: Int32 = -1
        while descriptor < 0 {
            descriptor = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            guard descriptor < 0 else { break }
            guard errno == ENXIO, child.isRunning, Date() < deadline else {
                child.signal(SIGKILL)
                _ = child.wait(timeout: 10)
                throw PostgresError("psql did not open its input \(fifo): \(child.stderr)")
            }
            usleep(10_000)
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        input = descriptor
    }

    /// Sends `sql`: statements, each ended by `;`.
    public func send(_ sql: String) throws(PostgresError) {
        let bytes = Array((sql + "\n").utf8)
        guard input >= 0, bytes.withUnsafeBytes({ write(input, $0.baseAddress, $0.count) }) == bytes.count else {
            throw PostgresError("psql's session is closed: \(child.stderr)")
        }
    }

    /// psql's next output line, or nil after `timeout` seconds.
    public func readLine(timeout: Double = 10) -> String? { child.readLine(timeout: timeout) }

    /// Ends the session (a transaction left open rolls back); psql's exit status.
    public func close() -> Int32? {
        if input >= 0 { Glibc.close(input) }
        input = -1
        return child.wait(timeout: 30)
    }

    deinit {
        if input >= 0 { Glibc.close(input) }
        child.signal(SIGKILL)
        _ = child.wait(timeout: 10)
    }
}
