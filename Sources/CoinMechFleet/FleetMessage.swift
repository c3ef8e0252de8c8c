import CoinMechProtocol

/// One message from a cabinet, read from its topic and payload (docs/FLEET.md, Topics). The
/// topic is `<prefix><site>/<cabinet>/<name>`; a payload must name the topic's cabinet (F3) and
/// carry `v: 1` (F1).
public enum FleetMessage: Sendable, Equatable {
    case event(Event)
    case state(State)
    /// The bridge's `status`, kept whole (its fields are the bridge's to grow).
    case status(cabinet: String, site: String, json: String)
    case totals(cabinet: String, site: String, json: String)
    case reply(Reply)

    /// The cabinet that spoke.
    public var cabinet: String {
        switch self {
        case .event(let event): event.cabinet
        case .state(let state): state.cabinet
        case .status(let cabinet, _, _), .totals(let cabinet, _, _): cabinet
        case .reply(let reply): reply.cabinet
        }
    }

    public struct Event: Sendable, Equatable {
        public var cabinet: String
        public var site: String
        public var seq: Int64
        public var kind: String
        public var time: Double
        /// The message as it came, JSON text; its `event` member is the daemon's event.
        public var json: String
        public var published: Double?
    }

    public struct State: Sendable, Equatable {
        public var cabinet: String
        public var site: String
        public var online: Bool
        public var reason: String?
        /// Absent in the last will: the receiver uses its own clock.
        public var time: Double?
        public var bridgeVersion: String?
        public var daemonVersion: String?
        /// In `online`: the bridge says something at least this often while up (`CabinetHearing`).
        public var heartbeat: Double?
    }

    public struct Reply: Sendable, Equatable {
        public var cabinet: String
        public var site: String
        public var id: String
        public var command: String
        public var ok: Bool
        /// For `resend`: the ranges the ledger does not hold.
        public var missing: [ClosedRange<Int64>]
        public var errorCode: String?
        public var json: String
    }

    /// Why a message was refused: logged and counted, never stored as valid.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var topic: String
        public var reason: String
        public var description: String { "\(topic): \(reason)" }
    }

    /// Reads a message; nil for a topic that is not a cabinet's (the fleet's own acks and
    /// commands, which it hears through its wildcard subscriptions are not subscribed to).
    public static func read(topic: String, payload: [UInt8], prefix: String) throws(Refusal) -> FleetMessage? {
        guard topic.hasPrefix(prefix) else { return nil }
        let levels = topic.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard levels.count >= 3 else { return nil }
        let site = levels[0], cabinet = levels[1], name = levels[2...].joined(separator: "/")
        func refuse(_ reason: String) -> Refusal { Refusal(topic: topic, reason: reason) }
        // The fleet's own users' topics (ACL patterns reach them) are no cabinet's.
        if cabinet.hasPrefix("coinmech-") { return nil }
        guard ["event", "state", "status", "totals"].contains(name) || name.hasPrefix("reply/") else { return nil }
        // An empty retained payload clears a retired cabinet's topic.
        if payload.isEmpty { return nil }
        // PostgreSQL's text and jsonb hold no NUL: such a payload could never be stored.
        guard !payload.contains(0), !String(decoding: payload, as: UTF8.self).lowercased().contains("\\u0000") else { throw refuse("holds a NUL character") }
        guard let object = JSON.parse(String(decoding: payload, as: UTF8.self))?.object else { throw refuse("not a JSON object") }
        guard let v = object["v"]?.int else { throw refuse("no contract version 'v'") }
        guard v == 1 else { throw refuse("contract version \(v) is not known here (v1)") }
        guard let named = object["cabinet"]?.string else { throw refuse("no 'cabinet'") }
        guard named == cabinet else { throw refuse("the payload names cabinet '\(named)', the topic '\(cabinet)' (F3)") }
        let text = String(decoding: payload, as: UTF8.self)
        switch name {
        case "event":
            guard let seq = object["seq"]?.int, seq >= 1 else { throw refuse("no seq ≥ 1") }
            // The contract's range: a seq past it cannot come from a ledger, and near Int64.max
            // it would make the fleet's own arithmetic overflow.
            guard seq <= FleetLimits.maxSeq else { throw refuse("seq \(seq) is beyond the contract's range (below 2^53)") }
            guard let event = object["event"], event.object != nil else { throw refuse("no 'event' object") }
            guard event["seq"]?.int == seq else { throw refuse("event.seq differs from seq \(seq)") }
            guard let kind = event["kind"]?.string, !kind.isEmpty else { throw refuse("event \(seq) has no kind") }
            guard let time = event["time"]?.double else { throw refuse("event \(seq) has no time") }
            // Money is summed from value_minor: one coin's value, a whole number of minor units
            // in 0 … FleetLimits.maxCoinMinor, or nothing.
            if let value = event["value_minor"] {
                guard case .int(let minor) = value else { throw refuse("event \(seq)'s value_minor \(value) is not a whole number of minor units") }
                guard (0...FleetLimits.maxCoinMinor).contains(minor) else {
                    throw refuse("event \(seq)'s value_minor \(minor) is not one coin's value (0 … \(FleetLimits.maxCoinMinor) minor units)")
                }
            }
            // A collection's rows are sums of coins: each in 0 … FleetLimits.maxSumMinor.
            for key in ["collected", "unconfirmed"] {
                guard let rows = event[key] else { continue }
                guard let list = rows.array else { throw refuse("event \(seq)'s \(key) is not a list of totals rows") }
                for row in list {
                    guard let minor = row["value_minor"]?.int, (0...FleetLimits.maxSumMinor).contains(minor) else {
                        throw refuse("event \(seq)'s \(key) holds a row whose value_minor is not a sum of coins (0 … 2^53 − 1 minor units)")
                    }
                }
            }
            // The message as it came: PostgreSQL takes the daemon's event out of it (`->'event'`),
            // in C and on the database's core, rather than this thread writing it again.
            return .event(Event(cabinet: cabinet, site: site, seq: seq, kind: kind, time: time, json: text, published: object["published"]?.double))
        case "state":
            guard let state = object["state"]?.string, state == "online" || state == "offline" else { throw refuse("state is not online or offline") }
            return .state(State(cabinet: cabinet, site: site, online: state == "online", reason: object["reason"]?.string,
                                time: object["time"]?.double, bridgeVersion: object["bridge_version"]?.string,
                                daemonVersion: object["daemon_version"]?.string, heartbeat: object["heartbeat_s"]?.double.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }))
        case "status":
            return .status(cabinet: cabinet, site: site, json: text)
        case "totals":
            return .totals(cabinet: cabinet, site: site, json: text)
        default:
            guard let id = object["id"]?.string, let command = object["cmd"]?.string, let ok = object["ok"]?.bool else {
                throw refuse("a reply needs id, cmd and ok")
            }
            var missing: [ClosedRange<Int64>] = []
            for range in object["result"]?["missing"]?.array ?? [] {
                guard let pair = range.array, pair.count == 2, let a = pair[0].int, let b = pair[1].int, a >= 1, a <= b, b <= FleetLimits.maxSeq else {
                    throw refuse("missing holds a bad range (two seqs, 1 ≤ from ≤ to < 2^53)")
                }
                missing.append(a...b)
            }
            return .reply(Reply(cabinet: cabinet, site: site, id: id, command: command, ok: ok, missing: missing,
                                errorCode: object["error"]?["code"]?.string, json: text))
        }
    }
}
