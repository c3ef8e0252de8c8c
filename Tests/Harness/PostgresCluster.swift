import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL 15 cluster of a test's own (docs/FLEET.md, "The fleet's tests"): initdb in a
/// folder of the test, the server in the foreground as a child of the test (so it is reaped and
/// dies with it), reached by its Unix socket in that folder only (no TCP). Run as the `postgres`
/// user when the test runs as root (the server refuses root), through `setpriv`, which execs
/// rather than forks.
public final class PostgresCluster {
    public let dir: String
    /// Names the socket (`<dir>/.s.PGSQL.<port>`); no TCP listener.
    public let port = 5432
    public var socketDirectory: String { dir }
    public private(set) var server: ChildProcess?
    private var starts = 0
    private let asUser: [String]
    static let bin = "/usr/lib/postgresql/15/bin"

    public init(dir: String) throws(PostgresError) {
        self.dir = dir
        guard FileManager.default.fileExists(atPath: "\(Self.bin)/initdb") else {
            throw PostgresError("\(Self.bin)/initdb not found: scripts/bootstrap installs postgresql-15")
        }
        if getuid() == 0 {
            guard let user = getpwnam("postgres") else { throw PostgresError("no postgres user (installing postgresql-15 makes it)") }
            chown(dir, user.pointee.pw_uid, user.pointee.pw_gid)
            // The kernel clears the parent-death signal when the user changes; keep restores it,
            // so a test that dies takes its server with it.
            asUser = ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--pdeathsig=keep", "--"]
        } else {
            asUser = []
        }
        try run(asUser + ["\(Self.bin)/initdb", "-D", "\(dir)/data", "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"], "initdb")
        try start()
    }

    public func start() throws(PostgresError) {
        starts += 1
        // After a crash the server syncs its whole data folder before it takes connections;
        // syncfs does that in one call where fsync of each file took 20 s on a slow disk.
        let command = asUser + ["\(Self.bin)/postgres", "-D", "\(dir)/data", "-p", "\(port)", "-k", dir, "-c", "listen_addresses=",
                                "-c", "fsync=on", "-c", "recovery_init_sync_method=syncfs", "-c", "max_connections=100"]
        do {
            server = try ChildProcess(path: command[0], Array(command.dropFirst()), stderrPath: "\(dir)/postgres-\(starts).log")
        } catch { throw PostgresError("cannot start postgres: \(error)") }
        let deadline = Date().addingTimeInterval(60)
        while (try? psql("SELECT 1", database: "postgres")) != "1" {
            guard server?.isRunning == true else { throw PostgresError("postgres exited at start: see \(dir)/postgres-\(starts).log") }
            guard Date() < deadline else { throw PostgresError("postgres did not take connections within 60 s: see \(dir)/postgres-\(starts).log") }
            usleep(50_000)
        }
    }

    /// The last `bytes` of the running (or last) server's log: what a failed test shows.
    public func logTail(_ bytes: Int = 2000) -> String {
        let text = (try? String(contentsOfFile: "\(dir)/postgres-\(starts).log", encoding: .utf8)) ?? ""
        return String(text.suffix(bytes))
    }

    /// An immediate shutdown (SIGQUIT): no checkpoint, recovery from the WAL at the next start,
    /// as after a crash.
    public func crash() {
        server?.signal(SIGQUIT)
        _ = server?.wait(timeout: 60)
    }

    /// A fast, clean shutdown (SIGINT), as `systemctl stop` does.
    public func stop() {
        server?.signal(SIGINT)
        if server?.wait(timeout: 60) == nil {
            server?.signal(SIGKILL)
            _ = server?.wait(timeout: 20)
        }
    }

    /// A psql session held open between a test's steps (a transaction and its locks).
    public func session(database: String) throws(PostgresError) -> PostgresSession {
        try PostgresSession(socketDirectory: dir, port: port, database: database)
    }

    /// `psql -At -c sql`: the rows, `|` between fields, newline between rows.
    @discardableResult
    public func psql(_ sql: String, database: String) throws(PostgresError) -> String {
        try run(["/usr/bin/psql", "-X", "-q", "-h", dir, "-p", "\(port)", "-U", "postgres", "-d", database, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql], "psql")
    }

    @discardableResult
    private func run(_ command: [String], _ what: String) throws(PostgresError) -> String {
        let log = "\(dir)/\(what).log"
        let child: ChildProcess
        do { child = try ChildProcess(path: command[0], Array(command.dropFirst()), stderrPath: log) } catch { throw PostgresError("cannot start \(what): \(error)") }
        let output = String(decoding: child.readToEnd(), as: UTF8.self)
        guard child.wait(timeout: 120) == 0 else {
            throw PostgresError("\(what) failed: \((try? String(contentsOfFile: log, encoding: .utf8))?.suffix(600) ?? "")")
        }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

public struct PostgresError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
