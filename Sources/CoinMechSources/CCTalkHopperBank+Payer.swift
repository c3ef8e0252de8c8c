import CoinMechCCTalk
import CoinMechModel

/// Payout hoppers as the payout core sees them, read off their bank (`CCTalkHopperBank`), with
/// no I/O. A hopper cannot count the coins it holds: the ledger keeps its level (the core
/// plans from it); what it says is whether it can pay, who it is, its event counter (the mark
/// a step is journalled with) and its own account of each payout. `CCTalkMech` reads its bank
/// through these; the payout rig reads coinsim's hoppers the same way.
extension CCTalkHopperBank {
    /// What the hoppers say of themselves now, paying coins of `currency`.
    public func payingState(currency: String?) -> PayingDeviceState {
        var state = PayingDeviceState()
        if let currency {
            state.coins = PayoutCoins(currency: currency, coins: Dictionary(uniqueKeysWithValues: hoppers.enumerated().map { index, hopper in
                (index, PayoutCoin(coinID: hopper.unit.coinID, valueMinor: hopper.unit.valueMinor))
            }))
        }
        // Held: the hoppers are enabled only for the dispense under way.
        state.heldStill = held && isIdle
        // A round in which every hopper's status was read: a plan or a settlement waits for
        // one taken while held.
        state.countReads = rounds
        // A hopper that cannot pay now (a fault that waits for its reset, not answering,
        // another coin than configured) counts as empty, so no plan sends it a dispense.
        state.unavailable = Set(hoppers.indices.filter { !canPay($0) })
        state.identity = identity
        for index in hoppers.indices {
            if let mark = mark(index) { state.marks[index] = Int(mark) }
            if let unit = unitIdentity(index) { state.unitIdentities[index] = unit }
        }
        return state
    }

    /// Each hopper as `status` shows it (its level is the ledger's: the daemon adds it).
    public func deviceStatus(currency: String?) -> DeviceStatus.Hoppers {
        var status = DeviceStatus.Hoppers()
        status.currency = currency
        status.held = held
        status.units = hoppers.enumerated().map { index, hopper in
            var unit = DeviceStatus.Hopper(unit: index, address: hopper.unit.address, coinID: hopper.unit.coinID, valueMinor: hopper.unit.valueMinor)
            unit.responding = hopper.responding
            unit.canPay = canPay(index)
            unit.flags = hopper.registers?.description ?? "not read"
            unit.serialNumber = hopper.serialNumber
            if let reported = hopper.reportedCoin, reported != hopper.unit.coinID { unit.reportedCoin = reported }
            if let current = hopper.status {
                unit.eventCounter = current.eventCounter
                unit.paying = Int(current.remaining)
                unit.lastPaid = Int(current.lastPaid)
                unit.lastUnpaid = Int(current.lastUnpaid)
            }
            return unit
        }
        return status
    }

    /// The hoppers' own accounts of finished dispenses. A short payment a hopper accounts for
    /// is a jam the payout plans around; one it cannot account for ends the payout. Their
    /// units' counts are the ledger's levels, which the payout core keeps.
    public static func counts(_ payments: [CCTalkHopperPayment]) -> [DispenseCount] {
        payments.map { payment in
            DispenseCount(type: payment.unit, count: payment.count, tubes: [], jammed: payment.certain && payment.paid < payment.count,
                          uncertain: !payment.certain, devicePaid: payment.paid, deviceUnpaid: payment.unpaid)
        }
    }

    /// What the last step's hopper says it paid, by its own counter, of a payout left open; the
    /// steps before it are on the ledger's levels already.
    public func restartAccount(_ record: PayoutRecord) -> PayoutRestartAccount {
        guard let last = record.steps.last else { return .lastStep(paid: 0) }
        guard hoppers.indices.contains(last.type) else {
            return .unverifiable("the hopper of unit \(last.type) that paid is not configured any more")
        }
        let hopper = hoppers[last.type]
        guard let status = hopper.status, let registers = hopper.registers, status.remaining == 0 else { return .wait }
        let mark = last.deviceMark.map(UInt8.init(truncatingIfNeeded:))
        let unknown = { (why: String) in
            PayoutRestartAccount.lastStepUnknown("hopper \(hopper.unit.address): \(why), so what step \(record.steps.count) paid cannot be told; check the cash before paying the debt")
        }
        // Its counter speaks for this step only if it is the hopper that took it.
        switch sameHopper(last.type, as: record.device, step: last.device) {
        case .unread: return .wait
        case .other(let why): return unknown(why)
        case .same, .unrecorded: break
        }
        if registers.memoryChecksumError { return unknown("its memory of paid and unpaid coins may be wrong (memory checksum error)") }
        if let mark, status.eventCounter == CCTalkHopperStatus.counter(mark, after: 1) {
            return .lastStep(paid: Int(status.lastPaid))
        }
        if registers.powerDownDuringPayout, status.eventCounter == 0 {
            // The flag before the mark: a hopper with it set refuses every dispense, so power
            // went during this step (its mark may be 0 too); it kept the count.
            return .lastStep(paid: Int(status.lastPaid))
        }
        if let mark, status.eventCounter == mark, mark != 0 { return .lastStep(paid: 0) }  // never taken
        if mark == 0, status.eventCounter == 0 {
            // At 0 both before and now: not taken, or taken and paid and then a restart without
            // the flag (after its last coin). The hopper cannot tell which.
            return unknown("its event counter was 0 before the step and is 0 again without \"power down during payout\"")
        }
        // The earlier steps are on the ledger's levels; this one counts as nothing paid.
        return unknown("its event counter is \(status.eventCounter), and the step was journalled at \(last.deviceMark.map(String.init) ?? "no mark"): it restarted or was paid from by another host")
    }
}
