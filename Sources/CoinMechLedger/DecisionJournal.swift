import CoinMechModel
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The decision journal: fresh decisions made durable with one append and one `fdatasync`
/// before the mech is answered, so that the ledger's commit (SQLite's b-tree pages, indexes,
/// WAL frames) leaves the mech's wait. The deciding core commits the same decisions to the
/// ledger right after the answers; the journal only has to outlive a crash in between.
///
/// At start, before anything reads the ledger, `replay` puts every decision of the journal on
/// the ledger (one already there is a duplicate, which the ledger ignores: its key is the
/// coin's (source, epoch, device seq)) and empties the journal. A line a crash cut short was
/// never answered (the answer waits for the sync), so it is dropped; a damaged line followed by
/// good ones is not a crash's doing, and the daemon refuses to start rather than lose it.
///
/// Owned by the deciding thread (`@unchecked`): nothing else touches it.
public final class DecisionJournal: @unchecked Sendable {
    public let path: String
    private let descriptor: Int32
    private var size: Int
    /// Emptied at the next `trim` once this long (every decision in it is on the ledger then).
    public let trimAt: Int

    public static func path(directory: String) -> String { "\(directory)/decisions.journal" }

    /// Opens (creating) the journal in the ledger's directory.
    public init(directory: String, trimAt: Int = 256 * 1024) throws(LedgerError) {
        path = Self.path(directory: directory)
        self.trimAt = trimAt
        let created = access(path, F_OK) != 0
        descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .open(path: path, message: "cannot open the decision journal: \(String(cString: strerror(errno)))") }
        var status = stat()
        size = fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
        // The file's name must outlive a power cut too.
        if created { Self.syncDirectory(directory) }
    }

    deinit { close(descriptor) }

    /// Appends `records` and syncs them. Throws without a partial promise: what a failed append
    /// left is a torn tail, dropped at replay, and the batch goes to the ledger first instead.
    public func append(_ records: [DecisionRecord]) throws(LedgerError) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(records.count * 320)
        for record in records {
            guard let line = DecisionJournalLine.encode(record) else {
                throw .write(message: "decision journal: coin \(record.epoch)/\(record.deviceSeq) has a measurement that is not a finite number")
            }
            bytes += line
        }
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            let reason = written < 0 ? String(cString: strerror(errno)) : "wrote \(written) of \(bytes.count) bytes"
            throw .write(message: "decision journal \(path): \(reason)")
        }
        guard fdatasync(descriptor) == 0 else { throw .write(message: "decision journal \(path): fdatasync: \(String(cString: strerror(errno)))") }
        size += bytes.count
    }

    /// Empties the journal once it has grown past `trimAt`. Called only when every decision in
    /// it is on the ledger; not synced, since a trim a crash undoes only replays duplicates.
    public func trim() {
        guard size >= trimAt else { return }
        if ftruncate(descriptor, 0) == 0 { size = 0 }
    }

    /// What `replay` found.
    public struct Replay: Sendable, Equatable {
        /// Decisions put on the ledger (answered before a crash kept them off it).
        public var recorded = 0
        /// Decisions the ledger held already.
        public var alreadyRecorded = 0
        /// Bytes of a last append a crash cut short (never answered).
        public var tornBytes = 0
    }

    /// Puts every decision of the journal in `directory` on `ledger`, in one transaction, then
    /// empties the journal. No journal is nothing to do.
    public static func replay(directory: String, into ledger: Ledger) throws(LedgerError) -> Replay {
        let path = path(directory: directory)
        guard let data = FileManager.default.contents(atPath: path) else {
            if access(path, F_OK) == 0 { throw .open(path: path, message: "cannot read the decision journal: \(String(cString: strerror(errno)))") }
            return Replay()
        }
        let parsed = try parse(Array(data), path: path)
        var replay = Replay(tornBytes: parsed.tornBytes)
        if !parsed.records.isEmpty {
            let result: AppendResult
            do throws(LedgerError) {
                result = try ledger.append(parsed.records.map { .decision($0, credit: .onConfirmation) })
            } catch {
                // Fail closed: no coin is decided before the answered ones are on the ledger.
                let why = "the decision journal's \(parsed.records.count) decisions (answered before the last stop) cannot be put on the ledger, "
                    + "so no coin is decided until they are; the journal is kept"
                switch error {
                case .full(let message): throw .full(message: "\(message): \(why); free space or raise ledger.max_size_mb")
                case .busy(let message): throw .busy(message: "\(message): \(why)")
                default: throw .write(message: "\(error): \(why)")
                }
            }
            for outcome in result.outcomes {
                if case .recorded = outcome { replay.recorded += 1 } else { replay.alreadyRecorded += 1 }
            }
        }
        // Everything is on the ledger (synced): the journal starts empty.
        guard truncate(path, 0) == 0 else { throw .write(message: "decision journal \(path): cannot empty it: \(String(cString: strerror(errno)))") }
        return replay
    }

    /// The journal's records, and how many bytes of a torn last append were dropped.
    static func parse(_ bytes: [UInt8], path: String) throws(LedgerError) -> (records: [DecisionRecord], tornBytes: Int) {
        var records: [DecisionRecord] = []
        var damagedAt: (line: Int, offset: Int)?
        var start = 0
        var number = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            number += 1
            let complete = end < bytes.count
            switch complete ? DecisionJournalLine.decode(bytes[start..<end]) : .damaged {
            case .record(let record):
                if let damaged = damagedAt {
                    throw .open(path: path, message: "decision journal line \(damaged.line) is damaged and good lines follow it: "
                        + "not a crash's torn write. Nothing was replayed; keep the file for inspection, move it aside to start "
                        + "(decisions in it that the ledger lacks would be lost)")
                }
                records.append(record)
            case .damaged:
                if damagedAt == nil { damagedAt = (number, start) }
            }
            start = end + 1
        }
        return (records, damagedAt.map { bytes.count - $0.offset } ?? 0)
    }

    private static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}
