import CoinMechCCTalk
import CoinMechModel

/// Giving change from payout hoppers on the acceptor's bus. A hopper cannot count the coins it
/// holds, so its "tube" is the ledger's level for it (`inventory`), and what a step paid is
/// the hopper's own account (header 166), which the loop records as the level's move.
extension CCTalkMech: PayingMech {
    public var givesChange: Bool { bank != nil }

    public var payableCoins: (currency: String, coins: [Int: PayoutCoin])? {
        guard let bank, let payoutCurrency else { return nil }
        return (payoutCurrency, Dictionary(uniqueKeysWithValues: bank.hoppers.enumerated().map { index, hopper in
            (index, PayoutCoin(coinID: hopper.unit.coinID, valueMinor: hopper.unit.valueMinor))
        }))
    }

    /// Held: the hoppers are enabled only for the dispense under way. The acceptor goes on
    /// taking coins: it routes none into a hopper here (a recycling acceptor is not supported).
    public func holdForPayout(_ on: Bool) {
        guard var bank else { return }
        let asks = bank.hold(on)
        self.bank = bank
        ask(asks)
    }

    public var isHeldStill: Bool { bank.map { $0.held && $0.isIdle } ?? false }

    /// The ledger's levels; `reads` counts the rounds in which every hopper's status was read
    /// (a settlement or a plan waits for one taken while held).
    /// A hopper that cannot pay now (a fault that waits for its reset, not answering, another
    /// coin than configured) counts as empty, so no plan sends it a dispense it would refuse.
    public var tubeCounts: (reads: UInt64, counts: [Int], reported: Int)? {
        guard let bank else { return nil }
        return (bank.rounds, levels.indices.map { bank.canPay($0) ? levels[$0] : 0 }, levels.count)
    }

    public var deviceIdentity: String? { bank?.identity }

    public func countTubes() {
        guard var bank else { return }
        let asks = bank.count()
        self.bank = bank
        ask(asks)
    }

    public func dispense(type: Int, count: Int) -> Bool {
        guard var bank, let asks = bank.dispense(type, count: count) else { return false }
        self.bank = bank
        ask(asks)
        return true
    }

    public func takeDispensed() -> [DispenseCount] {
        defer { dispensed.removeAll() }
        return dispensed
    }

    public func deviceMark(type: Int) -> Int? { bank?.mark(type).map(Int.init) }

    public func recorded(_ changes: [InventoryChange]) {
        for change in changes where levels.indices.contains(change.unit) {
            levels[change.unit] = change.level(after: levels[change.unit])
        }
    }

    /// The hoppers' levels as the ledger holds them (steps before the last are on it), less
    /// what the last step's hopper says it paid, if its counter shows the step was taken.
    public func restartAccount(_ record: PayoutRecord) -> PayoutRestartAccount {
        guard let bank else { return .unverifiable("no hoppers are configured any more") }
        guard let last = record.steps.last else { return .counts(levels, reported: levels.count, inventory: [], caveat: nil) }
        guard bank.hoppers.indices.contains(last.type) else {
            return .unverifiable("the hopper of unit \(last.type) that paid is not configured any more")
        }
        let hopper = bank.hoppers[last.type]
        guard let status = hopper.status, let registers = hopper.registers, status.remaining == 0 else { return .wait }
        let paid: Int
        let mark = last.deviceMark.map(UInt8.init(truncatingIfNeeded:))
        let unknown = { (why: String) in
            PayoutRestartAccount.counts(self.levels, reported: self.levels.count, inventory: [],
                                        caveat: "hopper \(hopper.unit.address): \(why), so what step \(record.steps.count) paid cannot be told; check the cash before paying the debt")
        }
        // Its counter speaks for this step only if it is the hopper that took it.
        switch bank.sameHopper(last.type, as: record.device) {
        case .unread: return .wait
        case .other(let why): return unknown(why)
        case .same, .unrecorded: break
        }
        if registers.memoryChecksumError { return unknown("its memory of paid and unpaid coins may be wrong (memory checksum error)") }
        if let mark, status.eventCounter == CCTalkHopperStatus.counter(mark, after: 1) {
            paid = Int(status.lastPaid)
        } else if registers.powerDownDuringPayout, status.eventCounter == 0 {
            // The flag before the mark: a hopper with it set refuses every dispense, so power
            // went during this step (its mark may be 0 too); it kept the count.
            paid = Int(status.lastPaid)
        } else if let mark, status.eventCounter == mark, mark != 0 {
            paid = 0  // not taken
        } else if mark == 0, status.eventCounter == 0 {
            // At 0 both before and now: not taken, or taken and paid and then a restart without
            // the flag (after its last coin). The hopper cannot tell which.
            return unknown("its event counter was 0 before the step and is 0 again without \"power down during payout\"")
        } else {
            // The earlier steps are on the ledger's levels; this one counts as nothing paid.
            return unknown("its event counter is \(status.eventCounter), and the step was journalled at \(last.deviceMark.map(String.init) ?? "no mark"): it restarted or was paid from by another host")
        }
        var counts = levels
        counts[last.type] -= paid
        let change = InventoryChange(source: "", unit: last.type, coinID: last.coinID, valueMinor: last.valueMinor,
                                     kind: .paid(requestID: record.order.requestID, step: record.steps.count, paid: paid,
                                                 unpaid: max(last.count - paid, 0)))
        return .counts(counts, reported: counts.count, inventory: paid > 0 ? [change] : [], caveat: nil)
    }

    /// Finished dispenses become counts: the levels with the paid coins taken off (they move
    /// for good once the ledger records it). A short payment the hopper accounts for is a jam
    /// the payout plans around; one it cannot account for ends the payout.
    func collectPayments() {
        guard var bank else { return }
        let payments = bank.takeFinished()
        self.bank = bank
        for payment in payments {
            // The paying hopper's own level, less what it paid, is the step's fall; the others
            // count as empty where they cannot pay, so the rest is not planned onto them.
            var counts = levels.indices.map { $0 == payment.unit || bank.canPay($0) ? levels[$0] : 0 }
            if counts.indices.contains(payment.unit) { counts[payment.unit] -= payment.paid }
            dispensed.append(DispenseCount(type: payment.unit, count: payment.count, tubes: counts,
                                           jammed: payment.certain && payment.paid < payment.count, uncertain: !payment.certain,
                                           devicePaid: payment.paid, deviceUnpaid: payment.unpaid))
        }
    }
}
