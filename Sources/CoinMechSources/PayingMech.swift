import CoinMechModel

/// A mech that gives change from its own tubes (an MDB changer) or from payout hoppers (a
/// ccTalk acceptor's bus). The deciding loop runs the payout journal around it (CoinMechCore's `PayoutRun`): it holds the mech, has it count its tubes, journals
/// a step, asks for the DISPENSE, and settles from the counts the mech reports after.
public protocol PayingMech: AcceptorMech {
    /// The coins it pays, by its coin type, and their currency; nil until it is set up.
    var payableCoins: (currency: String, coins: [Int: PayoutCoin])? { get }
    /// Holds it still for a payout (taking no coin, its own buttons paying none), or lets it
    /// go back to what the chain and the operator allow.
    func holdForPayout(_ on: Bool)
    /// Set up, confirmed held, quiet since, and not paying: only a payout moves its tubes now,
    /// so a count taken from here is a payout's starting point.
    var isHeldStill: Bool { get }
    /// Tube counts taken since the start, and the latest (with how many tubes that reply
    /// counted); `countTubes` asks for a fresh one.
    var tubeCounts: (reads: UInt64, counts: [Int], reported: Int)? { get }
    /// Who it is, as the payout journal records it (serial number and coin table): a payout
    /// left open is settled from the tubes only of the changer that paid it.
    var deviceIdentity: String? { get }
    func countTubes()
    /// Asks it to pay `count` coins of `type`; false if it cannot take the command now.
    func dispense(type: Int, count: Int) -> Bool
    /// DISPENSEs that are over, oldest first, with the tubes counted after each.
    func takeDispensed() -> [DispenseCount]

    /// Whether it gives change at all (a ccTalk acceptor does only with hoppers configured).
    var givesChange: Bool { get }
    /// The device's own mark a step from `type` is journalled with (a hopper's event counter,
    /// which says after a crash whether the step was taken); nil where the tubes tell.
    func deviceMark(type: Int) -> Int?
    /// What settles a payout found open at a start, from the held device's own account.
    func restartAccount(_ record: PayoutRecord) -> PayoutRestartAccount
    /// The ledger recorded these moves of its inventory: the levels follow them.
    func recorded(_ changes: [InventoryChange])
}

extension PayingMech {
    public var givesChange: Bool { true }
    public func deviceMark(type: Int) -> Int? { nil }
    /// A changer's tubes, as counted with it held: their fall since each step is what it paid,
    /// if it is the changer that paid.
    public func restartAccount(_ record: PayoutRecord) -> PayoutRestartAccount {
        PayoutRestartAccount.changer(record, tubes: tubeCounts.map { ($0.counts, $0.reported) }, device: deviceIdentity)
    }
    public func recorded(_ changes: [InventoryChange]) {}
}
