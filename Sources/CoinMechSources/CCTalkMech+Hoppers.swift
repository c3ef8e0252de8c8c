import CoinMechCCTalk
import CoinMechModel

/// Giving change from payout hoppers on the acceptor's bus: the hoppers' requests go out
/// through the host; what the payout core reads of them is their bank's
/// (`CCTalkHopperBank+Payer`).
extension CCTalkMech: PayingMech {
    public var givesChange: Bool { bank != nil }

    /// The ledger keeps the hoppers' levels; each names itself by its serial number.
    public var payoutCapabilities: PayoutCapabilities { [.ledgerKeepsLevels, .identifies] }

    /// The acceptor goes on taking coins while the hoppers are held: it routes none into a
    /// hopper here (a recycling acceptor is not supported).
    public var payingState: PayingDeviceState { bank?.payingState(currency: payoutCurrency) ?? PayingDeviceState() }

    public func holdForPayout(_ on: Bool) {
        guard var bank else { return }
        let asks = bank.hold(on)
        self.bank = bank
        ask(asks)
    }

    public func countUnits() {
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

    public func restartAccount(_ record: PayoutRecord) -> PayoutRestartAccount {
        bank?.restartAccount(record) ?? .unverifiable("no hoppers are configured any more")
    }

    /// Finished dispenses, as the hoppers account for them.
    func collectPayments() {
        guard var bank else { return }
        dispensed += CCTalkHopperBank.counts(bank.takeFinished())
        self.bank = bank
    }
}
