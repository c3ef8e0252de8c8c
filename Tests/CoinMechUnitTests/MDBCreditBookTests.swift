import CoinMechMDB
import CoinMechModel
import CoinMechSources
import Testing

/// An MDB changer's coins between its POLL replies and the ledger: numbered once, kept until
/// stored, never numbered twice, never dropped.
@Suite("MDB: the credit book numbers each kept coin once and keeps it until the ledger has it")
struct MDBCreditBookTests {
    private static func row(_ number: UInt64, tubes: [UInt8] = Array(repeating: 0, count: 16)) -> AcceptorCounter {
        AcceptorCounter(epoch: MDBCreditBook.epoch, eventNumber: number, lastResults: tubes, serialNumber: nil, expectsRestart: false)
    }

    private func numbers(_ batch: AcceptorBatch?) -> [UInt64] {
        batch?.entries.compactMap { if case .credit(let credit) = $0 { credit.number } else { nil } } ?? []
    }

    @Test("coins are numbered on from the ledger's row, and a batch goes from the row to the row after it, tubes included")
    func numbering() {
        var book = MDBCreditBook(persisted: Self.row(41))
        book.kept(type: 2, coinID: "USD25", routing: .tube, tubeCount: 7)
        book.kept(type: 0, coinID: "USD5", routing: .cashBox, tubeCount: 0)
        let (batch, released) = book.take()
        #expect(!released)
        #expect(numbers(batch) == [42, 43])
        #expect(batch?.before == Self.row(41))
        #expect(batch?.after.eventNumber == 43)
        #expect(batch?.after.lastResults[2] == 7 && batch?.after.lastResults[0] == 0)
        let first = batch?.entries.first.flatMap { if case .credit(let credit) = $0 { credit } else { nil } }
        #expect(first == AcceptorCredit(epoch: 1, number: 42, position: 3, coinID: "USD25", sorterPath: 1, routing: "tube"))
        #expect(book.take().batch == nil, "nothing waits once taken")
        #expect(book.recorded?.eventNumber == 43)
    }

    @Test("a batch the ledger refused is offered again with the same numbers, first, with the coins kept since; the hold ends when one is stored")
    func refused() {
        var book = MDBCreditBook(persisted: nil)
        book.kept(type: 2, coinID: "USD25", routing: .tube, tubeCount: 3)
        let refused = book.take().batch
        book.notRecorded()
        #expect(book.isHeld)
        #expect(book.recorded == nil)
        book.kept(type: 1, coinID: "USD10", routing: .cashBox, tubeCount: 0)  // before COIN TYPE 0 took effect
        let again = book.take()
        #expect(numbers(again.batch) == [1, 2])
        #expect(again.batch?.before == refused?.before)
        #expect(!again.released, "refused once: still held")
        let next = book.take()  // no word from the loop: stored
        #expect(next.released && !book.isHeld)
        #expect(next.batch == nil)
        #expect(book.recorded?.eventNumber == 2)
    }

    @Test("a row already where the batch ends means it was stored: nothing is offered again; a row moved elsewhere numbers the same coins on from it")
    func rewind() {
        var book = MDBCreditBook(persisted: Self.row(10))
        book.kept(type: 2, coinID: "USD25", routing: .tube, tubeCount: 4)
        let batch = book.take().batch
        book.rewind(to: batch?.after)
        #expect(book.take().batch == nil)

        book.kept(type: 0, coinID: "USD5", routing: .tube, tubeCount: 9)
        book.kept(type: 0, coinID: "USD5", routing: .tube, tubeCount: 10)
        #expect(numbers(book.take().batch) == [12, 13])
        book.rewind(to: Self.row(20))
        let renumbered = book.take().batch
        #expect(numbers(renumbered) == [21, 22])
        #expect(renumbered?.before == Self.row(20))
        book.kept(type: 2, coinID: "USD25", routing: .tube, tubeCount: 5)
        #expect(numbers(book.take().batch) == [23])
    }

    @Test("a refused offer stored after all: the coins up to the row are dropped, never renumbered; the others keep their numbers; the hold ends")
    func refusedButStored() {
        var book = MDBCreditBook(persisted: Self.row(10))
        book.kept(type: 2, coinID: "USD25", routing: .tube, tubeCount: 4)
        let first = book.take().batch
        book.notRecorded()
        book.kept(type: 0, coinID: "USD5", routing: .tube, tubeCount: 9)  // the offer again grows, and its tubes change
        #expect(numbers(book.take().batch) == [11, 12])
        // The first commit was durable after all: the row stands at its end.
        let released = book.rewind(to: first?.after)
        #expect(released, "the hold ends")
        #expect(!book.isHeld)
        let rest = book.take().batch
        #expect(numbers(rest) == [12])
        #expect(rest?.before == first?.after)
    }

    @Test("after a start, tubes higher than the row recorded are named; a first start names none")
    func tubesAfterStart() {
        var tubes = [UInt8](repeating: 0, count: 16)
        tubes[0] = 10
        tubes[2] = 4
        var book = MDBCreditBook(persisted: Self.row(5, tubes: tubes))
        #expect(book.started(withTubes: [12, 0, 4] + Array(repeating: 0, count: 13)) == ["type 0: 10 → 12"])
        #expect(book.tubes[0] == 12)
        var fresh = MDBCreditBook(persisted: nil)
        #expect(fresh.started(withTubes: [12] + Array(repeating: 0, count: 15)).isEmpty)
    }

    @Test("tubes that move with no coin going in (a payout, a manual dispense, a count that differs) reach the ledger on their own; unchanged ones do not")
    func tubesOnTheirOwn() {
        var book = MDBCreditBook(persisted: Self.row(5, tubes: [18, 10, 8, 5] + Array(repeating: 0, count: 12)))
        _ = book.tubesRose(to: [18, 10, 8, 5] + Array(repeating: 0, count: 12), cause: "count")
        #expect(book.take().batch == nil, "the same counts: nothing to record")
        _ = book.tubesRose(to: [17, 9, 7, 5] + Array(repeating: 0, count: 12), cause: "payout")
        let batch = book.take().batch
        #expect(batch?.entries == [.record(.tubesCounted(counts: [17, 9, 7, 5] + Array(repeating: 0, count: 12), cause: "payout"))])
        #expect(batch?.before?.eventNumber == 5 && batch?.after.eventNumber == 5, "no coin numbered")
        #expect(batch?.after.lastResults.prefix(4) == [17, 9, 7, 5])
        #expect(AcceptorRecord.tubesCounted(counts: [17, 9, 7, 5], cause: "payout").detail == ["tubes": "0:17,1:9,2:7,3:5", "cause": "payout"])
        // With a coin in the same batch, the coin's batch carries the tubes: no record of its own.
        book.tube(1, count: 8)
        book.kept(type: 0, coinID: "USD5", routing: .tube, tubeCount: 18)
        let coins = book.take().batch
        #expect(coins?.entries.count == 1 && coins?.after.lastResults.prefix(2) == [18, 8])
    }
}
