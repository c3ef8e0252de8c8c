import CoinMechModel

/// When the fleet last heard each cabinet live, and how often each cabinet's bridge promised to
/// speak (`heartbeat_s` in its `online` state). The broker's last will says "off line" only when
/// the broker saw the link die; a bridge killed while the broker was away leaves a retained
/// `online` for good. Silence past the promise is the only sign of that (AlertRules, FLEET.md B1a).
///
/// Silence is counted on a listening clock: the seconds this fleet instance has been connected
/// to the broker, over all its runs, measured on the monotonic clock (a wall clock stepped by
/// NTP, or a suspended machine, adds nothing). A fleet (or broker) that was away blames no
/// cabinet for the time it could not hear, and a fleet restarted often still sees a cabinet that
/// stays silent. The clock and each cabinet's last word are kept in the database (`FleetStore`).
///
/// Pure: the ingest feeds it what arrived, stamped when it arrived, and asks it for a cabinet's
/// silence as of the last time it took what had arrived.
public struct CabinetHearing: Sendable, Equatable {
    /// A moment on both clocks: the wall for people, the monotonic for durations.
    public struct Moment: Sendable, Equatable {
        public var wall: Double
        public var monotonic: Instant

        public init(wall: Double, monotonic: Instant) {
            self.wall = wall
            self.monotonic = monotonic
        }
    }

    /// A cabinet's last word: the wall clock for people, the listening clock for the rule.
    public struct Heard: Sendable, Equatable {
        public var at: Double
        public var listened: Double

        public init(at: Double, listened: Double) {
            self.at = at
            self.listened = listened
        }
    }

    public struct Silence: Sendable, Equatable {
        /// The last word heard live (wall clock).
        public var since: Double
        /// Seconds the fleet has listened since then.
        public var listenedFor: Double
        /// What the bridge promised, with the slack: silence beyond this is overdue.
        public var allowed: Double

        public init(since: Double, listenedFor: Double, allowed: Double) {
            self.since = since
            self.listenedFor = listenedFor
            self.allowed = allowed
        }
    }

    /// A bridge's status poll may land just after its refresh is due: twice the promise.
    public static let slack = 2.0

    /// The listening clock when the current connection began (or at the last fold).
    private var listenedBefore: Double
    /// When the current connection began; nil while not connected.
    private var connectedAt: Instant?
    public private(set) var heard: [String: Heard]
    private var heartbeats: [String: Double] = [:]
    /// Cabinets heard since the last `saved()`: what the store must save.
    private var changed: Set<String> = []

    public init(listened: Double = 0, heard: [String: Heard] = [:]) {
        listenedBefore = listened
        self.heard = heard
    }

    /// Seconds from `earlier` to `later`; 0 if `later` is not after it.
    public static func seconds(from earlier: Instant, to later: Instant) -> Double {
        max((later - earlier).seconds, 0)
    }

    /// The listening clock at `monotonic`.
    public func listened(at monotonic: Instant) -> Double {
        listenedBefore + (connectedAt.map { Self.seconds(from: $0, to: monotonic) } ?? 0)
    }

    public mutating func connected(at monotonic: Instant) {
        listenedBefore = listened(at: monotonic)
        connectedAt = monotonic
    }

    public mutating func disconnected(at monotonic: Instant) {
        listenedBefore = listened(at: monotonic)
        connectedAt = nil
    }

    /// Any message of the cabinet's. A retained one is the broker's memory, not the cabinet
    /// speaking now: it is not hearing.
    public mutating func heard(_ cabinet: String, retained: Bool, at moment: Moment) {
        guard !retained else { return }
        heard[cabinet] = Heard(at: moment.wall, listened: listened(at: moment.monotonic))
        changed.insert(cabinet)
    }

    /// The bridge's promise from its `state`; nil from a bridge that makes none (older than
    /// 0.7.0), which is then never called silent. A cabinet never heard live is counted from the
    /// promise (its `at` is then when the fleet learnt of it, not a word of its own).
    public mutating func promised(_ cabinet: String, heartbeat: Double?, at moment: Moment) {
        heartbeats[cabinet] = heartbeat
        if heartbeat != nil, heard[cabinet] == nil {
            heard[cabinet] = Heard(at: moment.wall, listened: listened(at: moment.monotonic))
            changed.insert(cabinet)
        }
    }

    /// The cabinet's silence as of `monotonic` (the last time the ingest took what had
    /// arrived: what came after is not known yet); nil if it promised nothing.
    public func silence(of cabinet: String, asOf monotonic: Instant) -> Silence? {
        guard let heartbeat = heartbeats[cabinet], let last = heard[cabinet] else { return nil }
        return Silence(since: last.at, listenedFor: max(listened(at: monotonic) - last.listened, 0), allowed: Self.slack * heartbeat)
    }

    /// The cabinets heard since the last `saved()`, with their last word.
    public var unsaved: [String: Heard] {
        Dictionary(uniqueKeysWithValues: changed.compactMap { cabinet in heard[cabinet].map { (cabinet, $0) } })
    }

    /// The store holds `unsaved` now (nothing ran between: the ingest's loop is one task).
    public mutating func saved() { changed.removeAll() }
}
