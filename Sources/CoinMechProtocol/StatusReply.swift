/// The `status` reply, typed (docs/PROTOCOL.md): the daemon builds it and writes `json`; a
/// client reads it back with `init(json:)`, which takes what an older daemon leaves out as
/// zero, empty or nil. Its keys are here and nowhere else.
public struct StatusReply: Sendable, Equatable {
    public struct Source: Sendable, Equatable {
        public var kind: String
        public var device: String
        public var connected: Bool
        /// Why it is disconnected, when it is.
        public var reason: String?

        public init(kind: String, device: String, connected: Bool, reason: String? = nil) {
            self.kind = kind
            self.device = device
            self.connected = connected
            self.reason = reason
        }
    }

    /// A link out of service (hung, quarantined) or restarting its plugin host, and why.
    public struct LinkProblem: Sendable, Equatable {
        public var link: String
        public var state: String
        public var cause: String
        public var reason: String
        /// When it began (wall clock, seconds).
        public var since: Double

        public init(link: String, state: String, cause: String, reason: String, since: Double) {
            self.link = link
            self.state = state
            self.cause = cause
            self.reason = reason
            self.since = since
        }
    }

    /// How often a link answered nonsense, or accepted coins this cabinet does not take, and the last time's words.
    public struct LinkCount: Sendable, Equatable {
        public var link: String
        public var count: Int64
        public var last: String

        public init(link: String, count: Int64, last: String) {
            self.link = link
            self.count = count
            self.last = last
        }
    }

    /// What the deciding core counted since the start.
    public struct Counters: Sendable, Equatable {
        public var readings: Int64 = 0
        public var accepted: Int64 = 0
        public var credited: Int64 = 0
        public var returnedAfterAccept: Int64 = 0
        public var unconfirmed: Int64 = 0
        public var queries: Int64 = 0
        public var connects: Int64 = 0
        public var reconnects: Int64 = 0
        public var rejected: Int64 = 0
        public var duplicates: Int64 = 0
        public var protocolErrors: Int64 = 0
        /// Readings returned for alloy figures that cannot be measurements.
        public var badAlloy: Int64 = 0
        public var deadlinePassed: Int64 = 0
        public var lateAnswers: Int64 = 0

        public init() {}

        static var keys: [(String, WritableKeyPath<Counters, Int64>)] { [
            ("readings", \.readings), ("accepted", \.accepted), ("credited", \.credited), ("returned_after_accept", \.returnedAfterAccept),
            ("unconfirmed", \.unconfirmed), ("queries", \.queries), ("connects", \.connects), ("reconnects", \.reconnects),
            ("rejected", \.rejected), ("duplicates", \.duplicates), ("protocol_errors", \.protocolErrors), ("bad_alloy", \.badAlloy),
            ("deadline_passed", \.deadlinePassed), ("late_answers", \.lateAnswers),
        ] }
    }

    public var source: Source
    /// The operator's inhibit.
    public var inhibited: Bool
    /// Why a link out of service keeps the mech inhibited, whatever the operator said.
    public var pluginInhibit: String?
    public var linkProblems: [LinkProblem] = []
    public var pending: Int64 = 0
    /// The ledger writes (false: it is failing, and every coin is returned).
    public var ledgerOK = true
    public var chainGeneration: Int64 = 0
    public var links: Int64 = 0
    public var pluginErrors: [LinkCount] = []
    public var pluginLies: [LinkCount] = []
    public var counters = Counters()
    public var uptimeSeconds: Double = 0
    /// How long ago the deciding loop last turned (it turns at least every second).
    public var heartbeatAgeMilliseconds: Int64 = 0
    public var lastSeq: Int64 = 0
    public var version: String = ""
    /// A coin acceptor's or changer's own status (docs/PROTOCOL.md, part three).
    public var acceptor: Acceptor?
    /// The ledger's files (the database and its WAL), in bytes.
    public var ledgerBytes: Int64 = 0
    /// Decided coins' time from the reading's arrival to the answer: bucket upper bounds in µs
    /// (a last bucket, beyond them, for the rest), the count per bucket, the sum in µs.
    public var decisionLatency = DecisionLatency()
    /// The customer's credit, one account per currency (as `credit` shows it).
    public var credit: [CreditBalanceReply.Account] = []

    public struct DecisionLatency: Sendable, Equatable {
        public var boundsMicroseconds: [Int64] = []
        public var counts: [Int64] = []
        public var sumMicroseconds: Int64 = 0
        public init(boundsMicroseconds: [Int64] = [], counts: [Int64] = [], sumMicroseconds: Int64 = 0) {
            self.boundsMicroseconds = boundsMicroseconds
            self.counts = counts
            self.sumMicroseconds = sumMicroseconds
        }
    }

    public init(source: Source, inhibited: Bool) {
        self.source = source
        self.inhibited = inhibited
    }

    public var json: JSON {
        var source: [String: JSON] = [
            "kind": .string(self.source.kind), "device": .string(self.source.device), "state": .string(self.source.connected ? "connected" : "disconnected"),
        ]
        if let reason = self.source.reason { source["reason"] = .string(reason) }
        var counters: [String: JSON] = [:]
        for (key, path) in Counters.keys { counters[key] = .int(self.counters[keyPath: path]) }
        var result: [String: JSON] = [
            "source": .object(source),
            "inhibited": .bool(inhibited),
            "link_problems": .array(linkProblems.map(Self.json)),
            "pending": .int(pending),
            "ledger": .string(ledgerOK ? "ok" : "failing"),
            "chain_generation": .int(chainGeneration),
            "links": .int(links),
            "plugin_errors": .array(pluginErrors.map(Self.json)),
            "plugin_lies": .array(pluginLies.map(Self.json)),
            "counters": .object(counters),
            "uptime_s": .double(uptimeSeconds),
            "heartbeat_age_ms": .int(heartbeatAgeMilliseconds),
            "last_seq": .int(lastSeq),
            "version": .string(version),
            "ledger_bytes": .int(ledgerBytes),
            "decision_latency": ["bounds_us": .array(decisionLatency.boundsMicroseconds.map(JSON.int)),
                                 "counts": .array(decisionLatency.counts.map(JSON.int)), "sum_us": .int(decisionLatency.sumMicroseconds)],
        ]
        result["credit"] = .array(credit.map(\.json))
        if let pluginInhibit { result["plugin_inhibit"] = .string(pluginInhibit) }
        if let acceptor { result["acceptor"] = acceptor.json }
        return .object(result)
    }

    public init(json s: JSON) {
        let source = s["source"]
        self.init(source: Source(kind: source?["kind"]?.string ?? "?", device: source?["device"]?.string ?? "?",
                                 connected: source?["state"]?.string == "connected", reason: source?["reason"]?.string),
                  inhibited: s["inhibited"]?.bool == true)
        pluginInhibit = s["plugin_inhibit"]?.string
        linkProblems = (s["link_problems"]?.array ?? []).map { problem in
            LinkProblem(link: problem["link"]?.string ?? "?", state: problem["state"]?.string ?? "?", cause: problem["cause"]?.string ?? "?",
                        reason: problem["reason"]?.string ?? "", since: problem["since"]?.double ?? 0)
        }
        pending = s["pending"]?.int ?? 0
        ledgerOK = s["ledger"]?.string != "failing"
        chainGeneration = s["chain_generation"]?.int ?? 0
        links = s["links"]?.int ?? 0
        pluginErrors = (s["plugin_errors"]?.array ?? []).map(Self.linkCount)
        pluginLies = (s["plugin_lies"]?.array ?? []).map(Self.linkCount)
        for (key, path) in Counters.keys { counters[keyPath: path] = s["counters"]?[key]?.int ?? 0 }
        uptimeSeconds = s["uptime_s"]?.double ?? 0
        heartbeatAgeMilliseconds = s["heartbeat_age_ms"]?.int ?? 0
        lastSeq = s["last_seq"]?.int ?? 0
        version = s["version"]?.string ?? ""
        acceptor = s["acceptor"].flatMap { $0 == .null ? nil : Acceptor(json: $0) }
        ledgerBytes = s["ledger_bytes"]?.int ?? 0
        credit = (s["credit"]?.array ?? []).compactMap { try? CreditBalanceReply.Account(json: $0) }
        let latency = s["decision_latency"]
        decisionLatency = DecisionLatency(boundsMicroseconds: (latency?["bounds_us"]?.array ?? []).compactMap(\.int),
                                          counts: (latency?["counts"]?.array ?? []).compactMap(\.int), sumMicroseconds: latency?["sum_us"]?.int ?? 0)
    }

    /// A link problem as `status` and `chain` show it.
    public static func json(_ problem: LinkProblem) -> JSON {
        ["link": .string(problem.link), "state": .string(problem.state), "cause": .string(problem.cause), "reason": .string(problem.reason),
         "since": .double(problem.since)]
    }

    private static func json(_ count: LinkCount) -> JSON {
        ["link": .string(count.link), "count": .int(count.count), "last": .string(count.last)]
    }

    private static func linkCount(_ json: JSON) -> LinkCount {
        LinkCount(link: json["link"]?.string ?? "?", count: json["count"]?.int ?? 0, last: json["last"]?.string ?? "")
    }
}
