import CoinMechCCTalk
import CoinMechCore
import CoinMechLedger
import CoinMechSources
import CoinMechModel
import Foundation
import Testing

/// The acceptor core on hand-made batches against a real ledger in a scratch directory: what
/// each buffer entry becomes, one transaction per batch with its counter, a batch applied twice
/// writing nothing, and a failed write carrying its events to the next.
@Suite("The acceptor core: a ccTalk batch, its chain verdicts and its counter in one transaction")
struct AcceptorCoreTests {
    static let source = "cctalk"

    func ledger() throws -> Ledger {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("acceptor-core-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return try Ledger(directory: dir)
    }

    static func state(_ number: UInt64, epoch: UInt64 = 0) -> CCTalkCounterState {
        CCTalkCounterState(epoch: epoch, eventNumber: number, lastResults: [UInt8](repeating: UInt8(number % 200), count: 10), serialNumber: 7)
    }

    static func credit(_ number: UInt64, position: Int, id: String, epoch: UInt64 = 0) -> CCTalkLedgerEntry {
        .credit(CCTalkBufferedEvent(epoch: epoch, number: number, result: .credit(position: position, sorterPath: 1), coinID: CoinID(id)))
    }

    /// The chain of the tests: EU200A is two euros, anything else is not credited.
    static func decide(_ coin: AcceptorCore.Coin) -> Decided {
        coin.coinID == "EU200A"
            ? Decided(verdict: .accept(currency: "EUR", code: "EUR_2", valueMinor: 200), link: "euro", chainGeneration: 1)
            : Decided(verdict: .reject(reason: "unknown_coin_id", message: "no such coin"), link: "euro", chainGeneration: 1)
    }

    /// The commit the core asks for when `batch` is reported (its last output).
    static func commit(_ core: inout AcceptorCore, _ batch: CCTalkLedgerBatch) throws -> AcceptorCommit {
        let outputs = core.step(.reported([.batch(AcceptorBatch(batch))]), at: at(0), decide: decide)
        guard case .commit(let commit)? = outputs.last else { throw TestFailure("no commit asked for: \(outputs)") }
        return commit
    }

    func write(_ commit: AcceptorCommit, _ ledger: Ledger) throws -> AcceptorAppend {
        try ledger.append(commit.entries, moving: try #require(commit.change))
    }

    /// What the core asks once `commit` was written.
    static func written(_ core: inout AcceptorCore, _ outcome: AcceptorAppend) -> [AcceptorOutput] {
        core.step(.committed(outcome), at: at(0), decide: decide)
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    @Test("backlog recorded, a coin id credited, one not; the counter moves with them; the same batch again writes nothing")
    func creditOnce() throws {
        let ledger = try ledger()
        var core = AcceptorCore(source: Self.source, address: 2)
        let first = CCTalkLedgerBatch(before: nil, after: Self.state(2), entries: [
            .backlog(CCTalkBufferedEvent(epoch: 0, number: 1, result: .credit(position: 6, sorterPath: 1), coinID: CoinID("EU200A"))),
            .backlog(CCTalkBufferedEvent(epoch: 0, number: 2, result: .error(CoinAcceptorError(code: 2)))),
        ])
        let backlog = try Self.commit(&core, first)
        #expect(Self.written(&core, try write(backlog, ledger)).count == 1, "published, no money: no failpoints")
        #expect(try ledger.totals().lifetime.isEmpty, "backlog is never credited")

        let second = CCTalkLedgerBatch(before: Self.state(2), after: Self.state(4), entries: [
            Self.credit(3, position: 6, id: "EU200A"), Self.credit(4, position: 1, id: "EU005A"),
        ])
        let commit = try Self.commit(&core, second)
        // Money: published between the failpoints of the money path.
        let stored = Self.written(&core, try write(commit, ledger))
        guard stored.count == 3, stored.first == .failpoint(.afterCommit), stored.last == .failpoint(.published), case .publish(let events) = stored[1] else {
            Issue.record("not stored: \(stored)"); return
        }
        #expect(events.map(\.kind) == ["decision", "coin", "coin_uncredited"])
        #expect(events.first?.deviceSeq == 3 && events.first?.epoch == 0)
        #expect(core.counts.credited == 1 && core.counts.uncredited == 1 && core.counts.backlog == 2)
        #expect(try ledger.acceptorCounter(source: Self.source, address: 2).map(CCTalkCounterState.init) == Self.state(4))

        // Applied before (a restart between the commit and the engine hearing of it): nothing
        // is written, and the engine is told where the ledger stands.
        let again = try Self.commit(&core, second)
        #expect(Self.written(&core, try write(again, ledger)) == [.rewind(to: AcceptorCounter(Self.state(4)))])
        #expect(Totals.value(of: try ledger.totals().lifetime) == ["EUR": 200])
        #expect(core.counts.credited == 1)
    }

    @Test("errors, invalid results, lost events, restarts and faults become acceptor events with the specification's names")
    func acceptorEvents() throws {
        let ledger = try ledger()
        var core = AcceptorCore(source: Self.source, address: 2)
        let fault = try #require(AcceptorEvent(.fault(CCTalkFaultCode(code: 5), extra: nil)))
        // A fault on its own waits for the next commit: none is asked for the report alone
        // while a batch follows in the same report.
        let faultFirst = core.step(.reported([fault]), at: at(0), decide: Self.decide)
        guard case .commit(let notes)? = faultFirst.last else { Issue.record("the fault is not recorded"); return }
        _ = core.step(.commitFailed(.busy(message: "another writer")), at: at(0), decide: Self.decide)
        #expect(notes.change == nil && notes.entries.count == 1)
        let batch = CCTalkLedgerBatch(before: nil, after: Self.state(3, epoch: 1), entries: [
            .restarted(epoch: 1, cause: .counterZero),
            .error(CCTalkBufferedEvent(epoch: 1, number: 1, result: .error(CoinAcceptorError(code: 25))), CoinAcceptorError(code: 25)),
            .invalid(CCTalkBufferedEvent(epoch: 1, number: 2, result: BufferedResult(a: 40, b: 1))),
            .lost(epoch: 1, numbers: 3...3),
        ])
        let commit = try Self.commit(&core, batch)
        guard case .publish(let events)? = Self.written(&core, try write(commit, ledger)).first(where: { if case .publish = $0 { true } else { false } }) else {
            Issue.record("not stored"); return
        }
        // The fault, whose own commit failed, waited for the batch's transaction.
        #expect(events.map(\.kind) == ["acceptor_fault", "mech_power_up", "cctalk_error", "cctalk_error", "cctalk_lost"])
        #expect(events[2].detail?.contains(CoinAcceptorError(code: 25).name) == true)
        #expect(core.counts.lostEvents == 1 && core.counts.errorEvents == 2 && core.counts.restarts == 1)
        #expect(core.counts.fault == CCTalkFaultCode(code: 5).description, "status shows the fault as the ccTalk host names it")
        #expect(try ledger.acceptorLostEvents(source: Self.source) == 1)
    }

    @Test("a failed write records nothing: the engine is handed the batch back and waiting events are kept for the next")
    func failedWrite() throws {
        var core = AcceptorCore(source: Self.source, address: 2)
        let batch = CCTalkLedgerBatch(before: nil, after: Self.state(1), entries: [Self.credit(1, position: 6, id: "EU200A")])
        let outputs = core.step(.reported([.note(.faultCleared), .batch(AcceptorBatch(batch))]), at: at(0), decide: Self.decide)
        #expect(outputs.first == .failpoint(.beforeCommit), "a batch with credits passes before-commit")
        guard case .commit(let commit)? = outputs.last else { Issue.record("no commit"); return }
        #expect(commit.entries.first == .note(.acceptor(source: Self.source, .faultCleared)), "the waiting event goes with the batch")
        // Failed: the engine is told to offer the batch again; the waiting event is not written
        // again until the next report.
        #expect(core.step(.commitFailed(.full(message: "disk full")), at: at(0), decide: Self.decide) == [.notRecorded])
        #expect(core.ledgerFailure != nil)
        let next = core.step(.reported([]), at: at(0), decide: Self.decide)
        guard case .commit(let notes)? = next.last else { Issue.record("the waiting event was dropped"); return }
        #expect(notes.entries == [.note(.acceptor(source: Self.source, .faultCleared))])
        #expect(notes.change == nil)
    }
}
