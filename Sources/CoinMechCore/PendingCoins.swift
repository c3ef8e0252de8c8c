import CoinMechModel

/// Accepted coins the mech has not yet said it stored or returned, and when to ask about them.
///
/// Pure policy, no I/O: the deciding loop feeds it what the mech says and the clock, and asks
/// it what to query and what to settle. A coin is settled once: by the mech's confirmation
/// (`$CMC`) of its current session, by its journal's answer (`$CMJ`) to a query, or — when no
/// answer can ever come — as unconfirmed.
public struct PendingCoins: Sendable {
    /// One accept waiting for the mech.
    public struct Coin: Sendable, Hashable {
        /// The decision's `seq` on the ledger.
        public var seq: Int64
        public var epoch: Int64
        public var deviceSeq: UInt64
        /// Queries sent since the last answer from the mech.
        public var unansweredQueries = 0
        /// From when a query is due.
        public var queryDue: Instant
    }

    /// How the mech's answer settles a coin.
    public struct Settlement: Sendable, Hashable {
        public var coin: Coin
        public var resolution: Resolution
        public var message: String
        /// Late evidence: the coin was settled unconfirmed, and the mech's journal now says it
        /// was stored (recorded as a `lateCredit`).
        public var late = false
        /// For an unconfirmed settlement: whether the mech may still know the coin (it left
        /// queries unanswered, or its session was unknown), so it is asked again after a connect.
        public var askAgain = false
    }

    /// How long the mech takes at most to store or return an accepted coin: no confirmation
    /// by then, and the host asks.
    public var confirmationWindow: Duration
    /// Queries the mech may leave unanswered, while connected, before the coin is settled as
    /// unconfirmed.
    public var maximumUnansweredQueries: Int
    private var coins: [Key: Coin] = [:]
    /// Coins settled unconfirmed that the mech may still know: asked once more after each
    /// connect (`askAllNow`), credited late if its journal says stored.
    private var unconfirmed: [Key: Coin] = [:]
    /// Of those, the ones not yet asked since the last connect.
    private var lateDue: Set<Key> = []

    struct Key: Hashable {
        var epoch: Int64
        var deviceSeq: UInt64
    }

    public init(confirmationWindow: Duration = .seconds(1), maximumUnansweredQueries: Int = 5) {
        self.confirmationWindow = confirmationWindow
        self.maximumUnansweredQueries = maximumUnansweredQueries
    }

    public var count: Int { coins.count }
    public var isEmpty: Bool { coins.isEmpty }
    public var all: [Coin] { coins.values.sorted { $0.seq < $1.seq } }

    /// An accept was answered at `answeredAt` (or restored from the ledger at start, with
    /// `answeredAt` now: ask as soon as the mech's session is known).
    public mutating func add(seq: Int64, epoch: Int64, deviceSeq: UInt64, answeredAt: Instant, restored: Bool = false) {
        let due = restored ? answeredAt : answeredAt + confirmationWindow
        coins[Key(epoch: epoch, deviceSeq: deviceSeq)] = Coin(seq: seq, epoch: epoch, deviceSeq: deviceSeq, queryDue: due)
    }

    /// A coin the ledger holds unconfirmed (restored at start): asked about once the mech's
    /// session is known.
    public mutating func addUnconfirmed(seq: Int64, epoch: Int64, deviceSeq: UInt64, now: Instant) {
        let key = Key(epoch: epoch, deviceSeq: deviceSeq)
        unconfirmed[key] = Coin(seq: seq, epoch: epoch, deviceSeq: deviceSeq, queryDue: now)
        lateDue.insert(key)
    }

    /// Unconfirmed coins the mech may still be asked about.
    public var unconfirmedCount: Int { unconfirmed.count }

    /// The mech's word on coin `deviceSeq` of `epoch`: the settlement, or nil if that coin is
    /// not pending (settled already, or never accepted). The coin leaves the pending set only
    /// when the settlement is committed (`settled`). For a coin settled unconfirmed, only
    /// "stored" settles it again: a late credit.
    public func settle(epoch: Int64, deviceSeq: UInt64, fate: CoinFate, fromJournal: Bool) -> Settlement? {
        let key = Key(epoch: epoch, deviceSeq: deviceSeq)
        if coins[key] == nil, let coin = unconfirmed[key], fate == .stored {
            return Settlement(coin: coin, resolution: .credited,
                              message: fromJournal ? "stored (the mech's journal, after the coin was listed unconfirmed)"
                                  : "stored (confirmed after the coin was listed unconfirmed)", late: true)
        }
        guard let coin = coins[key] else { return nil }
        switch fate {
        case .stored:
            return Settlement(coin: coin, resolution: .credited, message: fromJournal ? "stored (the mech's journal)" : "stored")
        case .returned:
            return Settlement(coin: coin, resolution: .returned,
                              message: fromJournal ? "the mech's journal says it was returned" : "the mech returned it after the accept")
        case .unknown:
            return Settlement(coin: coin, resolution: .unconfirmed,
                              message: "the mech has no record of it (power lost between the gate and the cash box, or too old for its journal)")
        }
    }

    /// Settlements that committed: those coins are no longer pending. An unconfirmed one the
    /// mech may still know is kept to be asked again; a late credit leaves for good.
    public mutating func settled(_ settlements: [Settlement]) {
        for settlement in settlements {
            let key = Key(epoch: settlement.coin.epoch, deviceSeq: settlement.coin.deviceSeq)
            coins[key] = nil
            if settlement.resolution == .unconfirmed, settlement.askAgain {
                unconfirmed[key] = settlement.coin
            } else {
                unconfirmed[key] = nil
                lateDue.remove(key)
            }
        }
    }

    /// Coins whose query is due at `now`, oldest first, at most `limit`: pending ones, then
    /// unconfirmed ones not yet asked since the last connect.
    public func due(now: Instant, limit: Int = 16) -> [Coin] {
        let pendingDue = coins.values.filter { $0.queryDue <= now }.sorted { $0.seq < $1.seq }
        let late = lateDue.compactMap { unconfirmed[$0] }.filter { $0.queryDue <= now }.sorted { $0.seq < $1.seq }
        return Array((pendingDue + late).prefix(limit))
    }

    /// Whether an unconfirmed coin waits to be asked about again.
    public var hasLateQueries: Bool { !lateDue.isEmpty }

    /// When the next query falls due.
    public var nextDue: Instant? { (coins.values.map(\.queryDue) + lateDue.compactMap { unconfirmed[$0]?.queryDue }).min() }

    /// A query about `coin` went out at `now`. Returns the settlement as unconfirmed once the
    /// mech has left `maximumUnansweredQueries` queries unanswered.
    public mutating func queried(_ coin: Coin, now: Instant) -> Settlement? {
        let key = Key(epoch: coin.epoch, deviceSeq: coin.deviceSeq)
        guard var current = coins[key] else {
            // An unconfirmed coin: asked once per connect, never given up on again.
            lateDue.remove(key)
            return nil
        }
        if current.unansweredQueries >= maximumUnansweredQueries {
            return Settlement(coin: current, resolution: .unconfirmed,
                              message: "the mech answered none of \(maximumUnansweredQueries) queries about it", askAgain: true)
        }
        current.unansweredQueries += 1
        current.queryDue = now + confirmationWindow
        coins[key] = current
        return nil
    }

    /// Every pending coin is due now (the mech's session just became known, after a connect).
    public mutating func askAllNow(_ now: Instant) {
        for key in coins.keys {
            coins[key]!.queryDue = min(coins[key]!.queryDue, now)
            coins[key]!.unansweredQueries = 0
        }
        for key in unconfirmed.keys {
            unconfirmed[key]!.queryDue = now
            lateDue.insert(key)
        }
    }

    /// Coins no query can reach are settled as unconfirmed: their epoch's session is unknown
    /// (asked again once it may be known), or its boot number was named again by a later
    /// session (never asked again: the journal for that number speaks of the later session).
    public func unaskable(epochs: EpochBook) -> [Settlement] {
        coins.values.filter { epochs.askableBoot(ofEpoch: $0.epoch) == nil }.sorted { $0.seq < $1.seq }.map { coin in
            if let boot = epochs.boots[coin.epoch] {
                return Settlement(coin: coin, resolution: .unconfirmed,
                                  message: "boot \(boot) was named again by a later session of the mech: its journal no longer speaks of this coin")
            }
            return Settlement(coin: coin, resolution: .unconfirmed, message: "the mech's session for this coin is unknown: no query can reach it", askAgain: true)
        }
    }
}
