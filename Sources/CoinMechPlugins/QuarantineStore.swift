import CoinMechChain
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A link taken out of service, and why: kept in the state directory so a restart does not put it
/// back. It holds while the link's name, plugin file and configuration stay the same; a reload or
/// restart with another plugin file or configuration for that link lifts it.
public struct QuarantineRecord: Sendable, Hashable, Codable {
    public var link: LinkIdentity
    public var problem: LinkHealth.Problem

    public init(link: LinkIdentity, problem: LinkHealth.Problem) {
        self.link = link
        self.problem = problem
    }

    /// Whether the configured link is still the one that was quarantined.
    public func holds(for identity: LinkIdentity) -> Bool {
        identity.name == link.name && identity.sha256 == link.sha256 && identity.configSHA256 == link.configSHA256
    }
}

/// The quarantined links, persisted in `<state>/plugin-quarantine.json` (written to a temporary
/// file, fsynced, renamed: never half-written). Shared by the chain builder, plugin hosts'
/// supervisors and the hang watch, on any thread.
public final class QuarantineStore: Sendable {
    public let path: String
    private let records: Mutex<[String: QuarantineRecord]>

    /// Reads the store; an unreadable file counts as empty (and is said in `loadProblem`).
    public init(stateDirectory: String) {
        path = "\(stateDirectory)/plugin-quarantine.json"
        var loaded: [String: QuarantineRecord] = [:]
        var problem: String?
        if let data = FileManager.default.contents(atPath: path) {
            do {
                for record in try JSONDecoder().decode([QuarantineRecord].self, from: data) { loaded[record.link.name] = record }
            } catch {
                problem = "\(path) is not a quarantine list (\(error)); starting with none"
            }
        }
        records = Mutex(loaded)
        loadProblem = problem
    }

    /// Why the file on disk could not be read, if it could not.
    public let loadProblem: String?

    public var all: [QuarantineRecord] { records.withLock { Array($0.values) }.sorted { $0.link.name < $1.link.name } }

    public func record(for link: String) -> QuarantineRecord? { records.withLock { $0[link] } }

    /// Adds or replaces the record of `record.link.name`, and writes the file.
    @discardableResult
    public func add(_ record: QuarantineRecord) -> String? {
        records.withLock { records in
            records[record.link.name] = record
            return Self.write(Array(records.values), to: path)
        }
    }

    /// Removes the record of link `name`; returns it if there was one.
    @discardableResult
    public func lift(_ name: String) -> QuarantineRecord? {
        records.withLock { records in
            guard let removed = records.removeValue(forKey: name) else { return nil }
            _ = Self.write(Array(records.values), to: path)
            return removed
        }
    }

    /// Writes the list; returns an error message, or nil when it is on disk.
    private static func write(_ records: [QuarantineRecord], to path: String) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(records.sorted { $0.link.name < $1.link.name }) else { return "cannot encode the quarantine list" }
        let temporary = "\(path).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "\(temporary): \(String(cString: strerror(errno)))" }
        let written = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            return "\(path): \(String(cString: strerror(errno)))"
        }
        return nil
    }
}
