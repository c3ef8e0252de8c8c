import CoinMechCore
import CoinMechModel

/// A ledger in memory with the real one's money-out rules (`LedgerWriter+Payout`), for the
/// payout core's tests and rig: a request id is one payout; a step needs an open payout and is
/// recorded once; a payout is settled once; a step's inventory move is counted once, and an
/// operator's request id once. An entry it refuses rolls the whole append back, as SQLite's
/// transaction does.
struct FakePayoutLedger {
    let source: String
    private(set) var seq: Int64 = 0
    /// Payouts by request id, and the ids in the order they were asked.
    private(set) var payouts: [String: PayoutRecord] = [:]
    private(set) var requested: [String] = []
    /// Each unit's level, where the ledger keeps them.
    private(set) var levels: [Int: InventoryLevel] = [:]
    /// The steps whose inventory move is counted: "request id/step/unit".
    private(set) var countedMoves: Set<String> = []
    private(set) var operatorChanges: [String: OperatorInventoryRecord] = [:]
    /// Every append that landed, as its event kinds.
    private(set) var commits: [[String]] = []

    init(source: String) {
        self.source = source
    }

    var open: [PayoutRecord] { requested.compactMap { payouts[$0] }.filter(\.isOpen) }

    mutating func append(_ entries: [LedgerEntry]) throws(LedgerError) -> AppendResult {
        var copy = self
        var events: [LedgerEvent] = []
        for entry in entries { events.append(try copy.apply(entry)) }
        copy.commits.append(events.map(\.kind))
        self = copy
        return AppendResult(outcomes: events.map { .recorded([$0]) }, events: events)
    }

    func lookUp(requestID: String, moves: [InventoryChange]) -> PayoutLookup {
        PayoutLookup(payout: payouts[requestID], operatorChange: operatorChanges[requestID], counted: moves.filter { countedMoves.contains(Self.key($0)) })
    }

    private static func key(_ move: InventoryChange) -> String {
        guard case .paid(let requestID, let step, _, _) = move.kind else { return "" }
        return "\(requestID)/\(step)/\(move.unit)"
    }

    private mutating func event(_ kind: String) -> LedgerEvent {
        seq += 1
        return LedgerEvent(seq: seq, time: 0, kind: kind, source: source)
    }

    private mutating func apply(_ entry: LedgerEntry) throws(LedgerError) -> LedgerEvent {
        switch entry {
        case .payoutRequested(let order, let source, _, let device):
            guard payouts[order.requestID] == nil else { throw .precondition("payout request \(order.requestID) is on the ledger already") }
            let event = event("payout_requested")
            var record = PayoutRecord(order: order, source: source, requestedSeq: event.seq, settledSeq: nil, steps: [], settlement: nil)
            record.device = device
            payouts[order.requestID] = record
            requested.append(order.requestID)
            return event
        case .payoutDispensing(let requestID, let step, let dispense):
            guard var record = payouts[requestID], record.isOpen else { throw .precondition("payout request \(requestID) is not open") }
            guard record.steps.count == step - 1 else { throw .precondition("payout \(requestID) step \(step) is on the ledger already, or out of order") }
            record.steps.append(dispense)
            payouts[requestID] = record
            return event("payout_dispensing")
        case .payoutSettled(let requestID, let settlement):
            guard var record = payouts[requestID], record.isOpen else { throw .precondition("payout request \(requestID) is not open: settled once") }
            let event = event(settlement.outcome.kind.rawValue)
            record.settlement = settlement
            record.settledSeq = event.seq
            payouts[requestID] = record
            return event
        case .inventory(let change):
            let row = levels[change.unit]
            let before = row.flatMap { $0.coinID == change.coinID ? $0.level : nil } ?? 0
            switch change.kind {
            case .paid:
                guard countedMoves.insert(Self.key(change)).inserted else { throw .precondition("step counted on the ledger already") }
            case .refilled(_, _, let id?), .set(_, _, let id?):
                guard operatorChanges[id] == nil else { throw .precondition("inventory request \(id) is on the ledger already") }
            case .refilled, .set:
                break
            }
            let event = event(change.kind.eventKind.rawValue)
            levels[change.unit] = InventoryLevel(unit: change.unit, coinID: change.coinID, valueMinor: change.valueMinor, level: change.level(after: before),
                                                 updatedSeq: event.seq)
            if let record = PayoutCore.record(change, before: before, seq: event.seq) { operatorChanges[record.requestID] = record }
            return event
        case .decision, .resolve, .lateCredit, .note, .collect, .creditOpened, .credit:
            throw .write(message: "the payout core wrote a money-in entry: \(entry)")
        }
    }
}
