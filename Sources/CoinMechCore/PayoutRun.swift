import CoinMechModel

/// The payout core's policy for one payout, from its plan to its settlement (`PayoutCore`
/// runs it): what to journal and send next, and what was paid, by the device's own counts.
/// The core has the units counted, journals each step before it sends the DISPENSE, and hands
/// in the counts taken once the device stopped paying.
///
/// A step pays the fall of its tube from the count journalled before it, never more than it
/// asked: the changer is held at COIN TYPE 0 from before the first count to the settlement,
/// so no coin goes into a tube meanwhile. A step that pays short marks its tube out (jammed or
/// empty) and the rest is planned again from the other tubes; what no plan can pay exactly is
/// owed (`payout_partial` with its debt). Nothing is ever dispensed on a guess.
public struct PayoutRun: Sendable {
    /// What a plan from the tubes came to.
    public enum Planned: Sendable, Hashable {
        /// These coins make the amount; the text is the journal's `plan` (`"2×USD25 1×USD10"`).
        case exact(String)
        /// No set of the coins held makes it: nothing is journalled, nothing moves.
        case cannotPayExact(below: Int64, above: Int64?)
    }

    /// One DISPENSE pays at most this many coins (MDB's count is four bits).
    public static let maximumCount = 15

    public let order: PayoutOrder
    public let coins: [Int: PayoutCoin]
    /// Steps journalled so far, in order.
    public private(set) var steps: [PayoutStep] = []
    /// Coins paid per type, counted.
    public private(set) var paid: [Int: Int] = [:]
    /// Why it will not be done (a tube that paid short, a remainder no plan pays).
    public private(set) var reason: String?
    /// Planned and not yet journalled, in order (a count above 15 is split as it is taken).
    private var queue: [PayoutPlanner.Coins] = []
    /// Tubes that paid short: not planned from again in this payout.
    private var out: Set<Int> = []
    /// The last step is sent and not yet counted.
    public private(set) var awaiting = false
    /// Where the changer pays a value itself, the most one value step asks; nil: DISPENSEs.
    public let valueStepMaximum: Int64?
    /// Value steps still to journal, in minor units, in order (the changer chooses the coins).
    private var valueQueue: [Int64] = []

    /// `valueStepMaximum`: the changer pays values itself (MDB level 3's alternative payout),
    /// at most this much a step; nil: it is told the coins (DISPENSE).
    public init(order: PayoutOrder, coins: [Int: PayoutCoin], valueStepMaximum: Int64? = nil) {
        self.order = order
        self.coins = coins
        self.valueStepMaximum = valueStepMaximum.flatMap { $0 > 0 ? $0 : nil }
    }

    public var paidMinor: Int64 { paid.reduce(0) { $0 + Int64($1.value) * (coins[$1.key]?.valueMinor ?? 0) } }

    /// The first plan, from the tubes counted with the changer held.
    public mutating func plan(tubes: [Int]) -> Planned {
        switch PayoutPlanner.plan(order.amountMinor, from: available(tubes)) {
        case .exact(let plan):
            // A changer that chooses its own coins is asked values, each a whole part of the
            // plan: a step cut from the amount alone may be a value no coins held make (1,275
            // from 25s and 10s), and the changer would pay it short.
            if let maximum = valueStepMaximum { valueQueue = Self.valueSteps(plan, maximum: maximum) } else { queue = plan }
            return .exact(plan.map { "\($0.count)×\(coins[$0.type]?.coinID ?? "type \($0.type)")" }.joined(separator: " "))
        case .cannotPayExact(let below, let above):
            return .cannotPayExact(below: below, above: above)
        }
    }

    /// The next DISPENSE to journal and send, its tube counted at `tubes`; nil when there is
    /// nothing more to pay (or nothing more that can be): then `settlement`.
    public mutating func nextStep(tubes: [Int]) -> PayoutStep? {
        precondition(!awaiting, "a step is counted before the next one is taken")
        if valueStepMaximum != nil {
            guard !valueQueue.isEmpty else { return nil }
            let value = valueQueue.removeFirst()
            let step = PayoutStep.value(value, tubesBefore: tubes)
            steps.append(step)
            awaiting = true
            return step
        }
        guard var head = queue.first else { return nil }
        let count = min(head.count, Self.maximumCount)
        head.count -= count
        if head.count == 0 { queue.removeFirst() } else { queue[0] = head }
        let step = PayoutStep(type: head.type, coinID: coins[head.type]?.coinID, valueMinor: head.valueMinor, count: count,
                              tubeBefore: tubes.indices.contains(head.type) ? tubes[head.type] : 0)
        steps.append(step)
        awaiting = true
        return step
    }

    /// The changer stopped paying the last step and counted its tubes. A short fall is believed
    /// only where the changer explains it (a jam reported, the tube empty): that tube is left out
    /// and the rest planned from the others. A fall it does not explain, or a count something
    /// else may have moved, ends the payout here: paying more on a count that may be wrong
    /// could pay twice, so what is left is recorded as owed for the operator to check.
    public mutating func dispensed(_ counted: DispenseCount) {
        guard awaiting, let step = steps.last else { return }
        awaiting = false
        if let before = step.tubesBefore { return valueDispensed(step, before: before, counted) }
        let name = step.coinID ?? "type \(step.type)"
        guard counted.type == step.type, counted.count == step.count else {
            queue = []
            reason = "the changer counted a DISPENSE of \(counted.count) of type \(counted.type), not the step's \(step.count) of \(name): nothing more paid"
            return
        }
        let now = counted.tubes.indices.contains(step.type) ? counted.tubes[step.type] : step.tubeBefore
        let count = min(max(step.tubeBefore - now, 0), step.count)
        paid[step.type, default: 0] += count
        guard count < step.count else { return }
        if counted.uncertain {
            queue = []
            reason = "\(name): \(count) of \(step.count) counted while the tubes may have moved for something else (a deposit, a manual dispense, a reset, still paying): nothing more paid on that count"
            return
        }
        guard counted.jammed || now == 0 else {
            queue = []
            reason = "\(name): \(count) of \(step.count) paid, with no jam or empty tube reported: not paid again from other tubes (the tube sensor may undercount)"
            return
        }
        out.insert(step.type)
        let owed = order.amountMinor - paidMinor
        reason = "\(name): \(count) of \(step.count) paid (\(counted.jammed ? "jam reported" : "tube empty"))"
        switch PayoutPlanner.plan(owed, from: available(counted.tubes)) {
        case .exact(let plan):
            queue = plan
        case .cannotPayExact:
            queue = []
            reason = (reason ?? "") + "; the other tubes cannot pay the remaining \(owed) exactly"
        }
    }

    /// Whether the device's tubes say the last step, just counted, paid less than it asked: a
    /// DISPENSE's tube fell by fewer coins, or a value step's tubes by less value. A hopper's
    /// own account (`devicePaid`) is not a tube count and is never short this way.
    public func countedShort(_ counted: DispenseCount) -> Bool {
        guard awaiting, counted.devicePaid == nil, let step = steps.last else { return false }
        if let before = step.tubesBefore { return Self.falls(from: before, to: counted.tubes, coins).value < step.valueMinor }
        guard counted.type == step.type, counted.count == step.count, counted.tubes.indices.contains(step.type) else { return false }
        return step.tubeBefore - counted.tubes[step.type] < step.count
    }

    /// Each tube's fall from `before` to `after` (coins it no longer holds), and their worth.
    static func falls(from before: [Int], to after: [Int], _ coins: [Int: PayoutCoin]) -> (byType: [Int: Int], value: Int64) {
        var byType: [Int: Int] = [:], value: Int64 = 0
        for (type, coin) in coins where before.indices.contains(type) && after.indices.contains(type) {
            let fall = max(before[type] - after[type], 0)
            byType[type] = fall
            value += Int64(fall) * coin.valueMinor
        }
        return (byType, value)
    }

    /// A value step counted: every tube's fall is what it paid. Short, by a changer that may
    /// not have been done or whose tubes something else moved, or by one that stopped short
    /// (a jam, a tube it would not pay from): nothing more is paid, the rest is owed for the
    /// operator to check. Paying the rest on a count that may be wrong could pay twice.
    ///
    /// The changer's own account (PAYOUT STATUS) is held against the fall: where they differ,
    /// one of them is wrong, and nothing more is paid on either. A fall worth more than the step
    /// asked is never recorded as paid beyond it (as a DISPENSE's is capped at its count): the
    /// changer's account where it fits within both, else the fall's largest coins up to the
    /// step's value; the payout ends there.
    private mutating func valueDispensed(_ step: PayoutStep, before: [Int], _ counted: DispenseCount) {
        guard counted.type == PayoutStep.anyType else {
            valueQueue = []
            reason = "the changer counted a DISPENSE of \(counted.count) of type \(counted.type), not the value step of \(step.valueMinor): nothing more paid"
            return
        }
        let (fallen, value) = Self.falls(from: before, to: counted.tubes, coins)
        let reported = counted.deviceCounts.map { counts in
            Dictionary(uniqueKeysWithValues: coins.keys.map { ($0, counts.indices.contains($0) ? counts[$0] : 0) })
        }
        if value > step.valueMinor {
            let values = coins.mapValues(\.valueMinor)
            let recorded = Self.capped(fallen, to: step.valueMinor, reported: reported, values: values)
            for (type, count) in recorded { paid[type, default: 0] += count }
            valueQueue = []
            reason = "the tubes fell by \(value) for a value step of \(step.valueMinor), more than it asked (a tube sensor wrong, or coins taken out by hand): "
                + "\(Self.worth(recorded, values: values)) recorded as paid, nothing more paid; check the tubes"
            return
        }
        for (type, fall) in fallen { paid[type, default: 0] += fall }
        if let reported, reported.filter({ $0.value > 0 }) != fallen.filter({ $0.value > 0 }) {
            valueQueue = []
            reason = "the changer's PAYOUT STATUS (\(Self.describe(reported))) differs from its tubes' fall (\(Self.describe(fallen))): the fall is recorded, nothing more paid; check the tubes"
            return
        }
        guard value < step.valueMinor else { return }
        valueQueue = []
        let why = counted.uncertain ? "while the tubes may have moved for something else, or it was still paying"
            : counted.jammed ? "jam reported" : "it paid no more"
        reason = "the changer paid \(value) of a value step of \(step.valueMinor) (\(why)): nothing more paid on that count"
    }

    /// What a fall worth more than `value` is recorded as: `reported` where it is within the
    /// fall and the value, else the fall's largest coins up to the value.
    static func capped(_ fallen: [Int: Int], to value: Int64, reported: [Int: Int]?, values: [Int: Int64]) -> [Int: Int] {
        if let reported, reported.allSatisfy({ $0.value >= 0 && $0.value <= fallen[$0.key, default: 0] }), worth(reported, values: values) <= value {
            return reported.filter { $0.value > 0 }
        }
        var left = value, taken: [Int: Int] = [:]
        for (type, fall) in fallen.sorted(by: { values[$0.key] ?? 0 > values[$1.key] ?? 0 }) {
            guard let coin = values[type], coin > 0 else { continue }
            let count = min(Int64(fall), left / coin)
            if count > 0 { taken[type] = Int(count) }
            left -= count * coin
        }
        return taken
    }

    static func worth(_ counts: [Int: Int], values: [Int: Int64]) -> Int64 {
        counts.reduce(Int64(0)) { $0 + Int64($1.value) * (values[$1.key] ?? 0) }
    }

    private static func describe(_ counts: [Int: Int]) -> String {
        let paid = counts.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.value)×type \($0.key)" }
        return paid.isEmpty ? "nothing" : paid.joined(separator: " ")
    }

    /// The plan's coins (largest first) cut into value steps of at most `maximum` each, every
    /// step a whole number of them.
    static func valueSteps(_ plan: [PayoutPlanner.Coins], maximum: Int64) -> [Int64] {
        var steps: [Int64] = [], current: Int64 = 0
        for coins in plan.sorted(by: { $0.valueMinor > $1.valueMinor }) {
            for _ in 0..<coins.count {
                if current + coins.valueMinor > maximum, current > 0 {
                    steps.append(current)
                    current = 0
                }
                current += coins.valueMinor
            }
        }
        if current > 0 { steps.append(current) }
        return steps
    }

    /// The last step was never sent (the changer could not take it): it paid nothing, and the
    /// payout ends here with the rest owed.
    public mutating func notSent(_ why: String) {
        guard awaiting, let step = steps.last else { return }
        awaiting = false
        queue = []
        valueQueue = []
        reason = step.paysValue ? "a value step of \(step.valueMinor): not sent (\(why))" : "\(step.coinID ?? "type \(step.type)"): not sent (\(why))"
    }

    /// No further step: the daemon is stopping; what was paid is settled, the rest owed.
    public mutating func stopHere(_ why: String) {
        guard !queue.isEmpty || !valueQueue.isEmpty else { return }
        queue = []
        valueQueue = []
        reason = why
    }

    /// How it ended, once `nextStep` has nothing more.
    public func settlement(afterRestart: Bool = false) -> PayoutSettlement {
        Self.settlement(order: order, paidMinor: paidMinor, paid: paid, reason: reason, afterRestart: afterRestart)
    }

    /// An open payout found at a start (the daemon that began it died): each tube's fall from
    /// the count journalled before its first step, up to what its steps asked, is what was
    /// paid. The changer was held since before that count, so nothing else moved its tubes.
    /// The core has checked that it is the device that paid (`PayoutCore`, by its identity); a
    /// count that does not cover a tube paid from settles nothing as paid, and says that the
    /// cash must be checked before the debt is paid.
    ///
    /// A value step (the changer chose the coins) may have paid from any tube its count before
    /// it held coins in, each up to the step's value in that coin; `values` are the coins' values
    /// by type (the device's, which the core has checked is the one that paid).
    public static func settle(_ record: PayoutRecord, tubes: [Int], reported: Int = 16, values coinValues: [Int: Int64] = [:]) -> PayoutSettlement {
        let paidFrom = record.steps.flatMap { step in
            step.tubesBefore.map { before in before.indices.filter { before[$0] > 0 && coinValues[$0] != nil } } ?? [step.type]
        }
        let unverified: String? = if let why = unreadable(record) {
            why
        } else if let type = paidFrom.first(where: { $0 >= reported }) {
            "the changer's count does not cover the tube of type \(type) paid from: what was paid cannot be told; check the cash before paying the debt"
        } else if record.steps.contains(where: \.paysValue) && coinValues.isEmpty {
            "the changer chose the coins of a value step, and their values are not known now: what was paid cannot be told; check the cash before paying the debt"
        } else {
            nil
        }
        if let unverified {
            return settlement(order: record.order, paidMinor: 0, paid: [:], reason: unverified, afterRestart: true)
        }
        var before: [Int: Int] = [:], asked: [Int: Int] = [:], values: [Int: Int64] = [:]
        for step in record.steps {
            if let tubesBefore = step.tubesBefore {
                // Any tube it held coins in, each up to the step's value in that coin.
                for (type, value) in coinValues where tubesBefore.indices.contains(type) && tubesBefore[type] > 0 && value > 0 {
                    if before[type] == nil { before[type] = tubesBefore[type] }
                    asked[type, default: 0] += Int(step.valueMinor / value)
                    values[type] = value
                }
                continue
            }
            if before[step.type] == nil { before[step.type] = step.tubeBefore }
            asked[step.type, default: 0] += step.count
            values[step.type] = step.valueMinor
        }
        var paid: [Int: Int] = [:]
        for (type, first) in before {
            let now = tubes.indices.contains(type) ? tubes[type] : first
            paid[type] = min(max(first - now, 0), asked[type] ?? 0)
        }
        // Value steps are capped per tube, so their falls across several tubes can add up past
        // what the payout asked: never recorded beyond it, as a value step's fall is live.
        if worth(paid, values: values) > record.order.amountMinor {
            paid = capped(paid, to: record.order.amountMinor, reported: nil, values: values)
        }
        let paidMinor = worth(paid, values: values)
        var reason = record.steps.isEmpty ? "the daemon stopped before any coin was to move"
            : paidMinor < record.order.amountMinor ? "the daemon stopped mid-payout; the device's own count (the changer's tubes, the hopper's last payout) says what was paid" : nil
        // A tube above its count before the payout was filled while no daemon watched: what it
        // paid cannot be told from it, and is counted as nothing.
        let rose = before.filter { type, first in tubes.indices.contains(type) && tubes[type] > first }.keys.sorted()
        if !rose.isEmpty, let said = reason {
            reason = said + "; tube(s) of type \(rose.map(String.init).joined(separator: ", ")) hold more than before the payout (refilled?): counted as not paid from, check the cash"
        }
        return settlement(order: record.order, paidMinor: paidMinor, paid: paid, reason: reason, afterRestart: true)
    }

    /// The largest count a journalled step's numbers may hold (a tube, a hopper's level, a
    /// DISPENSE): beyond it the journal is taken as damaged, not as a fact to pay or owe by.
    /// Above any level an operator can set (100,000) and any hopper holds, and low enough
    /// that no settlement's sum overflows.
    static let largestCount = 1_000_000

    /// Why an open payout's journal cannot be settled from, if it cannot: an amount or a step
    /// out of range, or a value step whose tube counts did not read back (a damaged ledger).
    /// Its numbers are bounded here, so the sums of a settlement cannot overflow.
    static func unreadable(_ record: PayoutRecord) -> String? {
        guard (1...PayoutPlanner.maximumAmount).contains(record.order.amountMinor) else {
            return "the journal's amount \(record.order.amountMinor) is out of range: what was paid cannot be told; check the cash before paying the debt"
        }
        let counts = 0...largestCount
        for (index, step) in record.steps.enumerated() {
            let inRange = (1...PayoutPlanner.maximumAmount).contains(step.valueMinor) && counts.contains(step.count) && counts.contains(step.tubeBefore)
                && (step.paysValue || (0..<256).contains(step.type))
            let tubesRead = step.tubesBefore.map { !$0.isEmpty && $0.count <= 16 && $0.allSatisfy(counts.contains) } ?? true
            guard inRange && tubesRead else {
                return "the journal's step \(index + 1) cannot be read (\(tubesRead ? "a number out of range" : "its tube counts")): what was paid cannot be told; check the cash before paying the debt"
            }
        }
        return nil
    }

    /// An open payout whose device cannot say what it paid: nothing settled as paid, the whole
    /// amount owed, and the reason says to check the cash first.
    public static func unverified(_ record: PayoutRecord, _ why: String) -> PayoutSettlement {
        settlement(order: record.order, paidMinor: 0, paid: [:], reason: why, afterRestart: true)
    }

    private static func settlement(order: PayoutOrder, paidMinor: Int64, paid: [Int: Int], reason: String?, afterRestart: Bool) -> PayoutSettlement {
        let debt = max(order.amountMinor - paidMinor, 0)
        let outcome: PayoutSettlement.Outcome = debt == 0 ? .done : paidMinor == 0 ? .failed : .partial
        return PayoutSettlement(outcome: outcome, paidMinor: paidMinor, debtMinor: debt, paidCoins: paid.filter { $0.value > 0 },
                                reason: debt == 0 ? nil : reason, afterRestart: afterRestart)
    }

    private func available(_ tubes: [Int]) -> [PayoutPlanner.Coins] {
        coins.compactMap { type, coin in
            guard !out.contains(type), tubes.indices.contains(type), tubes[type] > 0 else { return nil }
            return PayoutPlanner.Coins(type: type, valueMinor: coin.valueMinor, count: tubes[type])
        }
    }
}
