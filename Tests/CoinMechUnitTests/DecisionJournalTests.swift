@testable import CoinMechLedger
import CoinMechModel
@testable import CoinMechTestSupport
import Foundation
import Testing

/// The decision journal's file: what one append makes durable, what a crash can leave of the
/// last one, what replay puts on a real ledger.
@Suite("Decision journal: lines, torn tails, damage, replay into the ledger")
struct DecisionJournalTests {
    static func record(_ seq: UInt64, accept: Bool = true, epoch: Int64 = 3) -> DecisionRecord {
        DecisionRecord(source: "serial", epoch: epoch, deviceSeq: seq, diameterMM: 24.26, weightG: 5.67, thicknessMM: nil, channel: nil,
                       verdict: accept ? .accept(currency: "USD", code: "quarter", valueMinor: 25)
                           : .reject(reason: "slug", message: "weight 3.1 g \"light\"\n\tby a \\ third\u{1} — ¢"),
                       link: "coin-table", chainGeneration: 7)
    }

    static func file(_ directory: String) -> [UInt8] { Array(FileManager.default.contents(atPath: DecisionJournal.path(directory: directory)) ?? Data()) }

    @Test("what is appended reads back exactly: accepts, rejects with quotes, control characters and non-ASCII, absent fields, detail")
    func roundTrip() throws {
        let dir = TestSupport.temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var odd = Self.record(2, accept: false)
        odd.channel = 4
        odd.thicknessMM = 1.75
        odd.detail = ["coin_id": "US025A", "sorter_path": "1"]
        let records = [Self.record(1), odd, Self.record(3)]
        let journal = try DecisionJournal(directory: dir)
        try journal.append(Array(records.prefix(2)))
        let first = try #require(journal.lastAppendTime)
        try journal.append([records[2]])
        let second = try #require(journal.lastAppendTime)
        let parsed = try DecisionJournal.parse(Self.file(dir), path: "j")
        // Each stamped with its append's time, to the microsecond, exactly.
        let stamped = records.enumerated().map { index, record in
            var record = record
            record.time = index < 2 ? first : second
            return record
        }
        #expect(parsed.records == stamped)
        #expect(parsed.tornBytes == 0)
    }

    /// Lines as `append` writes them: numbered on, one append per inner list.
    static func lines(_ appends: [[UInt64]]) -> [[UInt8]] {
        var number: UInt64 = 0
        return appends.enumerated().flatMap { index, seqs in
            seqs.map { seq in
                number += 1
                return DecisionJournalLine.encode(Self.record(seq), number: number, batch: UInt64(index + 1))!
            }
        }
    }

    @Test("a last append cut short anywhere, or torn across its pages, is dropped (it was never answered); the appends before it stand")
    func tornTail() throws {
        let lines = Self.lines([[1], [2], [3, 4]])
        let whole = lines[0] + lines[1]
        let last = lines[2] + lines[3]
        for cut in [1, 10, last.count / 2, last.count - 2, last.count - 1] {
            let parsed = try DecisionJournal.parse(whole + last.prefix(cut) + [UInt8](repeating: 0, count: 4096), path: "j")
            #expect(parsed.records.map(\.deviceSeq) == (cut >= lines[2].count ? [1, 2, 3] : [1, 2]), "cut at \(cut)")
        }
        // A power cut can leave zeros where the first page of the last append was to go, and
        // its later page written: that append's good lines after the zeros are not replayed.
        let parsed = try DecisionJournal.parse(whole + [UInt8](repeating: 0, count: lines[2].count) + lines[3] + [0, 0, 0], path: "j")
        #expect(parsed.records.map(\.deviceSeq) == [1, 2])
        // Garbage in place of its first line, the same.
        var garbled = lines[2]
        garbled[5] ^= 0x20
        #expect(try DecisionJournal.parse(whole + garbled + lines[3], path: "j").records.map(\.deviceSeq) == [1, 2])
    }

    @Test("a damaged line followed by a line of a later append is not a torn write: replay refuses, saying what to do, and the ledger is untouched")
    func damageInTheMiddle() throws {
        let lines = Self.lines([[1], [2], [3]])
        var middle = lines[1]
        middle[20] ^= 0x01
        let bytes = lines[0] + middle + lines[2]
        let error = #expect(throws: LedgerError.self) { try DecisionJournal.parse(bytes, path: "j") }
        #expect("\(error.map { "\($0)" } ?? "")".contains("decision journal line 2 is damaged and lines written after it was synced follow"))
        #expect("\(error.map { "\($0)" } ?? "")".contains("move it aside"))
        let dir = TestSupport.temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ledger = try Ledger(directory: dir)
        #expect(FileManager.default.createFile(atPath: DecisionJournal.path(directory: dir), contents: Data(bytes)))
        #expect(throws: LedgerError.self) { try DecisionJournal.replay(directory: dir, into: ledger) }
        #expect(try ledger.pendingCoins(source: "serial").isEmpty)
        #expect(Self.file(dir) == bytes, "kept for inspection")
    }

    @Test("replay puts what the ledger lacks on it as pending, ignores what it has, empties the journal, and a second replay does nothing")
    func replay() throws {
        let dir = TestSupport.temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ledger = try Ledger(directory: dir)
        #expect(try DecisionJournal.replay(directory: dir, into: ledger) == DecisionJournal.Replay(), "no journal: nothing to do")
        _ = try ledger.append([.decision(Self.record(1), credit: .onConfirmation)])
        let journal = try DecisionJournal(directory: dir)
        try journal.append([Self.record(1), Self.record(2), Self.record(3, accept: false)])
        let replay = try DecisionJournal.replay(directory: dir, into: ledger)
        #expect(replay == DecisionJournal.Replay(recorded: 2, alreadyRecorded: 1, tornBytes: 0))
        #expect(try ledger.pendingCoins(source: "serial").map(\.deviceSeq) == [1, 2])
        #expect(Self.file(dir).isEmpty)
        #expect(try DecisionJournal.replay(directory: dir, into: ledger) == DecisionJournal.Replay())
        #expect(try ledger.pendingCoins(source: "serial").count == 2)
    }

    @Test("the journal is written in place into zeros allocated ahead; trim empties and allocates it again only past half; a measurement that is not a number is refused before anything is written")
    func inPlaceTrimAndRefusal() throws {
        let dir = TestSupport.temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let line = DecisionJournalLine.encode(Self.record(1), number: 1, batch: 1)!
        let journal = try DecisionJournal(directory: dir, capacity: line.count * 4)
        #expect(Self.file(dir) == [UInt8](repeating: 0, count: line.count * 4), "allocated, nothing written")
        try journal.append([Self.record(1)])
        journal.trim()
        #expect(Self.file(dir).count == line.count * 4, "written in place: the size did not change")
        #expect(try DecisionJournal.parse(Self.file(dir), path: "j").records.map(\.deviceSeq) == [1])
        try journal.append([Self.record(2)])
        journal.trim()
        #expect(Self.file(dir) == [UInt8](repeating: 0, count: line.count * 4), "emptied and allocated again")
        try journal.append([Self.record(3)])
        #expect(try DecisionJournal.parse(Self.file(dir), path: "j").records.map(\.deviceSeq) == [3], "numbered afresh")
        var nan = Self.record(4)
        nan.weightG = .nan
        #expect(throws: LedgerError.self) { try journal.append([Self.record(5), nan]) }
        #expect(try DecisionJournal.parse(Self.file(dir), path: "j").records.map(\.deviceSeq) == [3])
    }

    // Events of a journalled batch's unsynced commit are published at once. A power cut before
    // the next synced commit rolls that commit back; the replay puts the decisions back with
    // the same seqs, and it must put them back as they were published: a `time` of its own
    // read at the fleet as another ledger (ledger_conflict).
    @Test("a journalled batch's published events and the ones its replay records after a power cut are the same, time included")
    func replayKeepsTheTime() throws {
        let published = TestSupport.temporaryDirectory("journal-published")
        let afterCut = TestSupport.temporaryDirectory("journal-after-cut")
        defer { for dir in [published, afterCut] { try? FileManager.default.removeItem(atPath: dir) } }
        // Both ledgers hold what the last synced commit made durable: the first coin.
        let running = try Ledger(directory: published)
        let rebooted = try Ledger(directory: afterCut)
        for ledger in [running, rebooted] { _ = try ledger.append([.decision(Self.record(1), credit: .onConfirmation)]) }
        // The running daemon journals two decisions, answers, commits them unsynced, publishes.
        let journal = try DecisionJournal(directory: published)
        let batch = [Self.record(2), Self.record(3, accept: false)]
        try journal.append(batch)
        let events = try running.append(batch.map { .decision($0, credit: .onConfirmation) }, synced: false,
                                         time: journal.lastAppendTime).events
        // The power goes: the unsynced commit is gone, the synced journal is not.
        try FileManager.default.copyItem(atPath: DecisionJournal.path(directory: published), toPath: DecisionJournal.path(directory: afterCut))
        #expect(try DecisionJournal.replay(directory: afterCut, into: rebooted).recorded == 2)
        let replayed = try rebooted.events(since: 1)
        #expect(replayed.map(\.seq) == [2, 3])
        #expect(replayed == events, "what was published is what the ledger holds after the cut")
    }
}
