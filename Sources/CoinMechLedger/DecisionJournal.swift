import CoinMechModel
import CoinMechSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The decision journal: fresh decisions made durable with one write and one `fdatasync`
/// before the mech is answered, so that the ledger's commit (SQLite's b-tree pages, indexes,
/// WAL frames) leaves the mech's wait. The deciding core commits the same decisions to the
/// ledger right after the answers; the journal only has to outlive a crash in between.
///
/// The file is allocated (written with zeros, synced) ahead, and lines are written into it in
/// place: a write that extends a file makes `fdatasync` commit the file's new size through the
/// filesystem's own journal as well, which costs as much again on ext4 as the data
/// (docs/PERFORMANCE.md). Once half of it is used and every decision in it is on the ledger
/// (`trim`), it is emptied and allocated again, after an answer, not before one.
///
/// At start, before anything reads the ledger, `replay` puts every decision of the journal on
/// the ledger (one already there is a duplicate, which the ledger ignores: its key is the
/// coin's (source, epoch, device seq)) and empties the journal. A line a crash cut short was
/// never answered (the answer waits for the sync), so it and what follows are dropped; a
/// damaged line followed by a good line of a later append is not a crash's doing, and the
/// daemon refuses to start rather than lose it.
///
/// Owned by the deciding thread (`@unchecked`): nothing else touches it.
public final class DecisionJournal: @unchecked Sendable {
    public let path: String
    private let descriptor: Int32
    /// Where the next line goes, its number, and the next append's.
    private var offset = 0
    private var next: UInt64 = 1
    private var batch: UInt64 = 1
    /// Bytes allocated ahead; the journal is emptied and allocated again at the next `trim` past
    /// `trimAt`. One that must keep more (a ledger failing for long) grows.
    public let capacity: Int
    public let trimAt: Int

    public static func path(directory: String) -> String { "\(directory)/decisions.journal" }

    /// The time of the last append, written with its lines (seconds since 1970, whole
    /// microseconds): the commit of those decisions records it, and a replay again.
    public private(set) var lastAppendTime: Double?

    /// Opens the journal in the ledger's directory, empty (`replay` has put what it held on the
    /// ledger), allocated to `capacity` bytes of zeros and synced with its directory.
    public init(directory: String, capacity: Int = 256 * 1024) throws(LedgerError) {
        let path = Self.path(directory: directory)
        self.path = path
        self.capacity = capacity
        trimAt = capacity / 2
        // Opened and allocated before the journal exists: the descriptor has one owner, closed
        // here when allocating fails and by `deinit` once the journal owns it — never by both.
        descriptor = try Self.openAllocated(path, capacity: capacity)
        // The file's name must outlive a power cut too.
        DirectorySync.sync(directory)
    }

    private static func openAllocated(_ path: String, capacity: Int) throws(LedgerError) -> Int32 {
        let descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .open(path: path, message: "cannot open the decision journal: \(String(cString: strerror(errno)))") }
        guard allocate(descriptor, capacity: capacity) else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .open(path: path, message: "cannot allocate the decision journal (\(capacity) bytes): \(reason)")
        }
        return descriptor
    }

    /// Writes `capacity` zeros from the start and syncs them: blocks written, not merely
    /// reserved, so that writing lines into them changes no metadata.
    private static func allocate(_ descriptor: Int32, capacity: Int) -> Bool {
        let zeros = [UInt8](repeating: 0, count: capacity)
        let written = zeros.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return written == capacity && fsync(descriptor) == 0
    }

    deinit { close(descriptor) }

    /// Writes `records` and syncs them. Throws without a partial promise: what a failed write
    /// left is a torn line, dropped at replay, and the batch goes to the ledger first instead.
    /// Stamps them with the time it writes (`lastAppendTime`), unless a record has its own.
    public func append(_ records: [DecisionRecord]) throws(LedgerError) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(records.count * 320)
        let time = Self.now()
        for (index, var record) in records.enumerated() {
            record.time = record.time ?? time
            guard let line = DecisionJournalLine.encode(record, number: next + UInt64(index), batch: batch) else {
                throw .write(message: "decision journal: coin \(record.epoch)/\(record.deviceSeq) has a measurement that is not a finite number")
            }
            bytes += line
        }
        let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        guard written == bytes.count else {
            let reason = written < 0 ? String(cString: strerror(errno)) : "wrote \(written) of \(bytes.count) bytes"
            throw .write(message: "decision journal \(path): \(reason)")
        }
        guard fdatasync(descriptor) == 0 else { throw .write(message: "decision journal \(path): fdatasync: \(String(cString: strerror(errno)))") }
        offset += bytes.count
        next += UInt64(records.count)
        batch += 1
        lastAppendTime = time
    }

    /// Now, to the whole microsecond: a time the journal's line carries exactly as an integer.
    static func now() -> Double { Double(DecisionJournalLine.microseconds(Date().timeIntervalSince1970) ?? 0) / 1e6 }

    /// Empties the journal and allocates it again once past `trimAt`. Called only when every
    /// decision in it is on the ledger: a crash in between leaves the old lines (duplicates to
    /// replay), none, or zeros. Not one that fails: the journal then goes on growing, as when
    /// it must keep more.
    public func trim() {
        guard offset >= trimAt, ftruncate(descriptor, 0) == 0 else { return }
        offset = 0
        next = 1
        batch = 1
        _ = Self.allocate(descriptor, capacity: capacity)
    }

    /// What `replay` found.
    public struct Replay: Sendable, Equatable {
        /// Decisions put on the ledger (answered before a crash kept them off it).
        public var recorded = 0
        /// Decisions the ledger held already.
        public var alreadyRecorded = 0
        /// Bytes of a last write a crash cut short (never answered).
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

    /// What `replay` would read from a journal file's `bytes` (the fuzz target's entry).
    public static func read(_ bytes: [UInt8]) throws(LedgerError) -> (records: [DecisionRecord], tornBytes: Int) {
        try parse(bytes, path: "decisions.journal")
    }

    /// `record` as the line `append` writes (nil for one the format cannot carry).
    public static func line(_ record: DecisionRecord, number: UInt64, batch: UInt64) -> [UInt8]? {
        DecisionJournalLine.encode(record, number: number, batch: batch)
    }

    /// The journal's records: lines numbered one after another from the first, up to the
    /// first that is not (a torn last append, or the zeros allocated beyond the last line); and
    /// how many bytes of a torn line ended them.
    static func parse(_ bytes: [UInt8], path: String) throws(LedgerError) -> (records: [DecisionRecord], tornBytes: Int) {
        var records: [DecisionRecord] = []
        var last: (number: UInt64, batch: UInt64)?
        var broken: (line: Int, bytes: Int)?
        var start = 0
        var line = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            line += 1
            let segment = bytes[start..<end]
            let complete = end < bytes.count
            start = end + 1
            if segment.allSatisfy({ $0 == 0 }) {
                if broken == nil { broken = (line, 0) }
                continue
            }
            switch (complete ? DecisionJournalLine.decode(segment) : .damaged, broken) {
            case (.record(let record, let number, let batch), nil) where last.map({ number == $0.number + 1 && batch >= $0.batch }) ?? true:
                records.append(record)
                last = (number, batch)
            case (.record(_, _, let batch), .some(let at)) where batch > (last?.batch ?? 0) + 1:
                // The torn append is the last one: a good line of a later one means the damage
                // came after its sync.
                throw .open(path: path, message: "decision journal line \(at.line) is damaged and lines written after it was synced follow: "
                    + "not a crash's torn write. Nothing was replayed; keep the file for inspection, move it aside to start "
                    + "(decisions in it that the ledger lacks would be lost)")
            case (.record, nil), (.damaged, nil):
                broken = (line, segment.count + (complete ? 1 : 0))
            case (.record, .some), (.damaged, .some):
                continue  // the rest of the torn append
            }
        }
        return (records, broken?.bytes ?? 0)
    }
}
