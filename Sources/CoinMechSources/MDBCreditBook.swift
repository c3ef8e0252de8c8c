import CoinMechMDB
import CoinMechModel

/// An MDB changer's coins between its POLL replies and the ledger, with no I/O. MDB numbers
/// nothing and does not repeat a POLL, so a coin reported kept is numbered here, on from the
/// ledger's counter row (epoch 1, `eventNumber`), and kept until the ledger has it.
///
/// - `take` offers what waits as one batch from the row to the row after it. The loop records
///   it or says otherwise before the next `take`: silence means stored.
/// - `notRecorded` puts the batch's coins back first, with the same numbers, and holds the
///   changer (`isHeld`) until a batch is stored.
/// - `rewind` follows a row that is not where the batch started: if it is where the batch
///   ended, the batch was stored before; otherwise the same coins are numbered on from it.
///
/// The row's `lastResults` holds the 16 tube counts as of the last batch.
public struct MDBCreditBook: Sendable {
    public static let epoch: UInt64 = 1

    /// Where the ledger's row stands, as far as the book knows.
    public private(set) var recorded: AcceptorCounter?
    /// The tube counts as the changer last gave them.
    public private(set) var tubes: [UInt8]
    /// A batch could not be stored: the changer takes nothing until one is.
    public private(set) var isHeld = false
    /// The number of the last coin numbered.
    public private(set) var lastNumber: UInt64
    private var waiting: [AcceptorBatch.Entry] = []
    private var offered: AcceptorBatch?
    /// The tubes moved other than by a coin going in, and why: recorded with the next batch,
    /// or as one of their own (`tubes_counted`).
    private var tubesMoved: String?

    public init(persisted: AcceptorCounter?) {
        recorded = persisted
        lastNumber = persisted?.eventNumber ?? 0
        tubes = persisted.map { $0.lastResults.count == 16 ? $0.lastResults : Self.empty } ?? Self.empty
    }

    private static let empty = [UInt8](repeating: 0, count: 16)

    /// A coin the changer kept (`routing.isKept`), to its tube (holding `tubeCount` now) or the
    /// cash box: its number.
    @discardableResult
    public mutating func kept(type: Int, coinID: String?, routing: MDBChangerEvent.Routing, tubeCount: Int) -> UInt64 {
        if routing == .tube, (0..<16).contains(type) { tubes[type] = UInt8(clamping: tubeCount) }
        lastNumber += 1
        waiting.append(.credit(AcceptorCredit(epoch: Self.epoch, number: lastNumber, position: type + 1, coinID: coinID,
                                              sorterPath: routing.rawValue, routing: routing == .tube ? "tube" : "cash_box")))
        return lastNumber
    }

    /// A tube's count as the changer gave it (TUBE STATUS, coins paid by its own buttons).
    public mutating func tube(_ type: Int, count: Int, cause: String = "manual dispense") {
        guard (0..<16).contains(type) else { return }
        tubes[type] = UInt8(clamping: count)
        tubesMoved = cause
    }

    /// The changer's tubes after a start: those holding more than the row last recorded (coins
    /// a lost POLL reply took, or a refill by hand). A first start names none.
    public mutating func started(withTubes current: [Int]) -> [String] {
        let rose = tubesRose(to: current, cause: "start")
        return recorded == nil ? [] : rose
    }

    /// What waits, as one batch (nil if nothing does). A batch offered before and not refused
    /// since was stored: a hold ends (`released`).
    public mutating func take() -> (batch: AcceptorBatch?, released: Bool) {
        let released = offered != nil && isHeld
        if released { isHeld = false }
        offered = nil
        // Tubes that moved with no coin to carry them to the ledger go on their own.
        if waiting.isEmpty, let cause = tubesMoved, tubes != (recorded?.lastResults ?? Self.empty) {
            waiting = [.record(.tubesCounted(counts: tubes.map(Int.init), cause: cause))]
        }
        tubesMoved = nil
        guard !waiting.isEmpty else { return (nil, released) }
        let batch = AcceptorBatch(before: recorded, after: counter(), entries: waiting)
        offered = batch
        recorded = batch.after
        waiting.removeAll()
        return (batch, released)
    }

    /// The ledger could not store the batch last taken: its coins wait again, first.
    public mutating func notRecorded() {
        guard let batch = offered else { return }
        offered = nil
        recorded = batch.before
        waiting = batch.entries + waiting
        isHeld = true
    }

    /// The ledger's row is `counter`, not where the batch last taken started. Within the
    /// batch's numbers, an offer refused as far as the loop knew was stored after all: the
    /// coins up to the row are on the ledger and are dropped, never numbered again (a new
    /// number would credit them twice); the rest wait with their numbers. Outside them (behind
    /// the batch's start, or past its end: the row was moved by something else), none of these
    /// coins is on the ledger: they are numbered on from the row. Either way the batch is
    /// settled: a hold ends (true when it did).
    @discardableResult
    public mutating func rewind(to counter: AcceptorCounter?) -> Bool {
        guard let batch = offered else { return false }
        offered = nil
        recorded = counter
        let row = counter?.eventNumber ?? 0
        let entries = batch.entries + waiting
        if (batch.before?.eventNumber ?? 0)...batch.after.eventNumber ~= row {
            // The batch's records went with it when the row holds all of it (a tubes-only
            // batch moves no number: then the row's tubes say whether it was stored).
            let stored = counter == batch.after
            waiting = batch.entries.filter { entry in
                if case .credit(let credit) = entry { credit.number > row } else { !stored }
            } + waiting
            lastNumber = max(lastNumber, row)
        } else {
            var number = row
            waiting = entries.map { entry in
                guard case .credit(var credit) = entry else { return entry }
                number += 1
                credit.number = number
                return .credit(credit)
            }
            lastNumber = number
        }
        let released = isHeld
        isHeld = false
        return released
    }

    /// The tubes as the changer counts them now, against the book's: those holding more (coins
    /// a lost POLL reply carried, or a refill by hand), as "type n: before → now". The book
    /// takes the new counts.
    public mutating func tubesRose(to current: [Int], cause: String = "count") -> [String] {
        let rose = current.prefix(16).enumerated().compactMap { type, count in
            count > Int(tubes[type]) ? "type \(type): \(tubes[type]) → \(count)" : nil
        }
        for (type, count) in current.prefix(16).enumerated() { tubes[type] = UInt8(clamping: count) }
        tubesMoved = cause
        return rose
    }

    private func counter() -> AcceptorCounter {
        AcceptorCounter(epoch: Self.epoch, eventNumber: lastNumber, lastResults: tubes, serialNumber: nil, expectsRestart: false)
    }
}
