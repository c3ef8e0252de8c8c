/// What a paying device (an MDB changer, a ccTalk bus's payout hoppers) says of itself at one
/// moment, in its own words: the payout core plans, journals and settles from these, and from
/// nothing else the device does. Its driver fills it each turn of the deciding loop.
public struct PayingDeviceState: Sendable, Hashable {
    /// The coins it pays, by unit (a changer's coin type, a hopper's place in `source.hoppers`),
    /// and their currency; nil until it is set up.
    public var coins: PayoutCoins?
    /// Held for a payout, confirmed held, quiet since and not paying: only a payout moves its
    /// units from here, so a count taken now is a payout's starting point.
    public var heldStill = false
    /// Counts of its units completed since the start (a changer's TUBE STATUS, a round of every
    /// hopper's status): a count newer than the one asked for is fresh.
    public var countReads: UInt64 = 0
    /// Its own count of each unit (a changer's tubes) as last taken, and how many units that
    /// count covers; nil where the device cannot count what it holds (a hopper: the ledger
    /// keeps its level) or before the first count.
    public var units: [Int]?
    public var unitsReported = 0
    /// Units that cannot pay now (a hopper with a fault that waits for a reset, one that does
    /// not answer, one paying another coin than configured): planned as empty.
    public var unavailable: Set<Int> = []
    /// Who it is, as the payout journal records it (a changer's serial number and coin table,
    /// each hopper's address, serial number and coin): a payout left open is settled from its
    /// count only if the device is the one that paid. Nil while not known (not read yet): a
    /// device not known to be another one is not taken for another.
    public var identity: String?
    /// The device's own mark a step from a unit is journalled with (a hopper's event counter,
    /// which says after a crash whether the step was taken); none where the count tells.
    public var marks: [Int: Int] = [:]
    /// Who each unit is, where a unit names itself (a hopper's address, serial number and
    /// coin): journalled with each step it pays; none while its serial number is not read.
    public var unitIdentities: [Int: String] = [:]
    /// The most one value step may ask, where the device pays a value choosing the coins
    /// itself (MDB level 3's alternative payout: 255 scaled units); nil where it does not now.
    public var valueStepMaximum: Int64?

    public init() {}
}

/// The coins a paying device pays, by unit, and their currency.
public struct PayoutCoins: Sendable, Hashable {
    public var currency: String
    public var coins: [Int: PayoutCoin]

    public init(currency: String, coins: [Int: PayoutCoin]) {
        self.currency = currency
        self.coins = coins
    }
}
