import CoinMechModel

/// A mech that gives change: from its own tubes (an MDB changer) or from payout hoppers (a
/// ccTalk acceptor's bus). It carries out what the payout core (CoinMechCore's `PayoutCore`)
/// asks — hold, count, dispense — and says what it is and what it did in its own words
/// (`payingState`, `takeDispensed`, `restartAccount`); the rules are the core's.
public protocol PayingMech: AcceptorMech {
    /// Whether it gives change at all (a ccTalk acceptor does only with hoppers configured).
    var givesChange: Bool { get }
    /// What it can do as a payer.
    var payoutCapabilities: PayoutCapabilities { get }
    /// What it says of itself now.
    var payingState: PayingDeviceState { get }
    /// Holds it still for a payout (taking no coin into what pays, its own buttons paying
    /// none), or lets it go back to what the chain and the operator allow.
    func holdForPayout(_ on: Bool)
    /// Asks it for a fresh count of its units (`payingState.countReads` moves once it is in).
    func countUnits()
    /// Asks it to pay `count` coins of unit `type`; false if it cannot take the command now.
    func dispense(type: Int, count: Int) -> Bool
    /// Asks it to pay `valueMinor` in coins it chooses (`payingState.valueStepMaximum` says
    /// whether it can now); false if it cannot take the command. Counted as a DISPENSE is, with
    /// `PayoutStep.anyType` for its type.
    func payValue(_ valueMinor: Int64) -> Bool
    /// DISPENSEs that are over, oldest first, with its own account of each.
    func takeDispensed() -> [DispenseCount]
    /// What it says, held, of a payout found open at a start.
    func restartAccount(_ record: PayoutRecord) -> PayoutRestartAccount
}

extension PayingMech {
    public var givesChange: Bool { true }
    /// A device told which coins to pay pays no value of its own choosing.
    public func payValue(_ valueMinor: Int64) -> Bool { false }
}
