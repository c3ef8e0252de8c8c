/// What the dashboard shows, read from the fleet's database in one go per page: plain values,
/// so the pages are pure functions of them (`FleetPages`).
public enum FleetViews {
    /// Money in minor units of one currency (cents).
    public struct Money: Sendable, Equatable, Hashable {
        public var currency: String
        public var minor: Int64
        public init(currency: String, minor: Int64) {
            self.currency = currency
            self.minor = minor
        }
    }

    /// One line of the fleet page.
    public struct CabinetLine: Sendable, Equatable {
        public var cabinet: String
        public var site: String
        /// `online`, `offline` or `unknown` (no `state` heard yet).
        public var state: String
        /// When the state began (seconds since 1970), nil if unknown.
        public var stateSince: Double?
        /// Why offline: `stopped`, `lost`.
        public var stateReason: String?
        /// The cash box now: credit since the cabinet's last `collect`, per currency.
        public var cashBox: [Money]
        /// Credit since the start of today (the fleet's time zone), per currency.
        public var today: [Money]
        /// Kinds of the open alerts (`offline`, `jam`, `seq_gap` …).
        public var openAlerts: [String]
        /// The highest contiguous seq stored.
        public var storedSeq: Int64
        public init(cabinet: String, site: String, state: String, stateSince: Double?, stateReason: String?, cashBox: [Money], today: [Money],
                    openAlerts: [String], storedSeq: Int64) {
            self.cabinet = cabinet
            self.site = site
            self.state = state
            self.stateSince = stateSince
            self.stateReason = stateReason
            self.cashBox = cashBox
            self.today = today
            self.openAlerts = openAlerts
            self.storedSeq = storedSeq
        }
    }

    /// One stored event, as the cabinet page lists it.
    public struct EventLine: Sendable, Equatable {
        public var seq: Int64
        public var time: Double
        public var kind: String
        /// A short human summary: `USD_25 25 credited`, `reject by sanity: too light`.
        public var summary: String
        public init(seq: Int64, time: Double, kind: String, summary: String) {
            self.seq = seq
            self.time = time
            self.kind = kind
            self.summary = summary
        }
    }

    /// EVA-DTS-style counters: since the cabinet's last collection, and lifetime.
    public struct Counter: Sendable, Equatable {
        /// `credited`, `credited_value`, `returned`, `unconfirmed`, `rejects`, `power_ups`,
        /// `acceptor_lost_events`, `jams`.
        public var name: String
        public var sinceCollection: Int64
        public var lifetime: Int64
        public init(name: String, sinceCollection: Int64, lifetime: Int64) {
            self.name = name
            self.sinceCollection = sinceCollection
            self.lifetime = lifetime
        }
    }

    public struct Collection: Sendable, Equatable {
        public var id: Int64
        public var time: Double
        public var by: String
        public var counted: Money
        /// The ledger's figure for the same period (its `collect` event), and counted − ledger.
        public var ledger: Money
        public var difference: Int64
        public var ledgerSeq: Int64?
        public init(id: Int64, time: Double, by: String, counted: Money, ledger: Money, difference: Int64, ledgerSeq: Int64?) {
            self.id = id
            self.time = time
            self.by = by
            self.counted = counted
            self.ledger = ledger
            self.difference = difference
            self.ledgerSeq = ledgerSeq
        }
    }

    public struct Alert: Sendable, Equatable {
        public var id: Int64
        public var cabinet: String
        public var kind: String
        public var detail: String
        public var opened: Double
        public var closed: Double?
        public var ackedBy: String?
        public init(id: Int64, cabinet: String, kind: String, detail: String, opened: Double, closed: Double?, ackedBy: String?) {
            self.id = id
            self.cabinet = cabinet
            self.kind = kind
            self.detail = detail
            self.opened = opened
            self.closed = closed
            self.ackedBy = ackedBy
        }
    }

    /// Credit in one hour (its start, seconds since 1970), one currency.
    public struct HourlyCredit: Sendable, Equatable {
        public var hour: Double
        public var money: Money
        public init(hour: Double, money: Money) {
            self.hour = hour
            self.money = money
        }
    }

    /// A command the fleet sent the cabinet and its reply, if any.
    public struct CommandLine: Sendable, Equatable {
        public var id: String
        public var name: String
        public var args: String
        public var by: String
        public var sent: Double
        /// `ok`, an error code, or nil while no reply came.
        public var outcome: String?
        public init(id: String, name: String, args: String, by: String, sent: Double, outcome: String?) {
            self.id = id
            self.name = name
            self.args = args
            self.by = by
            self.sent = sent
            self.outcome = outcome
        }
    }

    public struct FleetPage: Sendable, Equatable {
        public var now: Double
        public var cabinets: [CabinetLine]
        public var openAlerts: [Alert]
        public init(now: Double, cabinets: [CabinetLine], openAlerts: [Alert]) {
            self.now = now
            self.cabinets = cabinets
            self.openAlerts = openAlerts
        }
    }

    public struct CabinetPage: Sendable, Equatable {
        public var now: Double
        public var line: CabinetLine
        public var recentEvents: [EventLine]
        public var counters: [Counter]
        public var collections: [Collection]
        public var alerts: [Alert]
        /// The last 7 days, hour by hour (hours without credit left out).
        public var hourly: [HourlyCredit]
        public var commands: [CommandLine]
        /// The latest `collect` event not yet matched by a recorded collection, if any: what a
        /// new collection will be compared against.
        public var pendingCollect: (seq: Int64, money: [Money])?
        /// The customer's credit per currency, from the cabinet's stored events: sales, refunds,
        /// escrow returns and expiries (count and value), and the last known balance.
        public var credit: [FleetStore.CreditFigures] = []
        public init(now: Double, line: CabinetLine, recentEvents: [EventLine], counters: [Counter], collections: [Collection], alerts: [Alert],
                    hourly: [HourlyCredit], commands: [CommandLine], pendingCollect: (seq: Int64, money: [Money])?) {
            self.now = now
            self.line = line
            self.recentEvents = recentEvents
            self.counters = counters
            self.collections = collections
            self.alerts = alerts
            self.hourly = hourly
            self.commands = commands
            self.pendingCollect = pendingCollect
        }

        public static func == (a: CabinetPage, b: CabinetPage) -> Bool {
            a.now == b.now && a.line == b.line && a.recentEvents == b.recentEvents && a.counters == b.counters && a.collections == b.collections
                && a.alerts == b.alerts && a.hourly == b.hourly && a.commands == b.commands
                && a.pendingCollect?.seq == b.pendingCollect?.seq && a.pendingCollect?.money == b.pendingCollect?.money && a.credit == b.credit
        }
    }
}
