import CoinMechMQTT
import CoinMechProtocol
import CoinMechSupport

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
        /// The cabinet the topic names, when it is a cabinet id: the one whose alert counts it.
        public var cabinet: String?
        public var kind: Kind
        public var reason: String
        public var description: String { "\(LogText.quoted(topic, limit: 120)): \(reason)" }

        public init(topic: String, cabinet: String?, kind: Kind, reason: String) {
            self.topic = topic
            self.cabinet = cabinet
            self.kind = kind
            self.reason = reason
        }

        /// What was wrong, as `/metrics` and the `refused_messages` alert count it.
        public enum Kind: String, Sendable, CaseIterable {
            /// Not JSON, a field missing or of the wrong type, a topic level that is no id.
            case malformed
            /// Another contract version (F1).
            case version
            /// The payload names another cabinet than its topic (F3).
            case wrongCabinet = "wrong_cabinet"
            /// A seq beyond the contract's range (below 2^53).
            case seqRange = "seq_range"
            /// A value no coin (or collection) can have.
            case valueRange = "value_range"
            /// Larger than `ingest.max_message_bytes`.
            case tooLarge = "too_large"
            /// A seq further above the cabinet's contiguous one than `FleetLimits.maxAhead`.
            case ahead
            /// A reply to a command this fleet did not send, or missing ranges it did not ask about.
            case forgedReply = "forged_reply"
            /// Over the cabinet's share of the ingest's queue: dropped unacked, sent again by its bridge.
            case flood
            /// The database refused it for its data.
            case database
        }
    }

    /// Whether the text writes a NUL as an escape (`\u0000`, any case of the `u`), which
    /// PostgreSQL's jsonb refuses: one pass over the bytes.
    static func escapesNUL(_ bytes: [UInt8]) -> Bool {
        let zero = UInt8(ascii: "0")
        var index = 0
        while index + 5 < bytes.count {
            if bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] | 0x20 == UInt8(ascii: "u"),
               bytes[index + 2] == zero, bytes[index + 3] == zero, bytes[index + 4] == zero, bytes[index + 5] == zero {
                return true
            }
            index += 1
        }
        return false
    }

    /// Whether JSON text opens more than `limit` arrays and objects inside each other (brackets
    /// inside strings left out), found in one pass before anything is decoded.
    static func nestsDeeperThan(_ limit: Int, _ bytes: [UInt8]) -> Bool {
        var depth = 0, inString = false, escaped = false
        for byte in bytes {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return false
    }

    /// The cabinet a topic names (`<prefix><site>/<cabinet>/…`), when it is a cabinet id: read
    /// without the payload, to count a message against its cabinet before it is read.
    public static func cabinet(in topic: String, prefix: String) -> String? {
        guard topic.hasPrefix(prefix) else { return nil }
        let levels = topic.utf8.dropFirst(prefix.utf8.count).split(separator: UInt8(ascii: "/"), maxSplits: 2, omittingEmptySubsequences: false)
        guard levels.count == 3, let cabinet = String(levels[1]), FleetID.isValid(cabinet), !cabinet.hasPrefix("coinmech-") else { return nil }
        return cabinet
    }

    /// Reads a message; nil for a topic that is not a cabinet's (the fleet's own acks and
    /// commands, which it hears through its wildcard subscriptions are not subscribed to).
    /// A payload longer than `maxBytes` is refused before it is read.
    public static func read(topic: String, payload: [UInt8], prefix: String, maxBytes: Int = .max) throws(Refusal) -> FleetMessage? {
        guard topic.hasPrefix(prefix) else { return nil }
        // Split on the bytes: `/` is ASCII, and a cut between characters would cost a walk over
        // every grapheme of every topic.
        let levels = topic.utf8.dropFirst(prefix.utf8.count).split(separator: UInt8(ascii: "/"), maxSplits: 2, omittingEmptySubsequences: false)
        guard levels.count == 3 else { return nil }
        let site = String(decoding: levels[0], as: UTF8.self), cabinet = String(decoding: levels[1], as: UTF8.self), name = String(decoding: levels[2], as: UTF8.self)
        let named = FleetID.isValid(cabinet) ? cabinet : nil
        func refuse(_ kind: Refusal.Kind, _ reason: String) -> Refusal { Refusal(topic: topic, cabinet: named, kind: kind, reason: reason) }
        // The fleet's own users' topics (ACL patterns reach them) are no cabinet's.
        if cabinet.hasPrefix("coinmech-") { return nil }
        guard ["event", "state", "status", "totals"].contains(name) || name.hasPrefix("reply/") else { return nil }
        // An empty retained payload clears a retired cabinet's topic.
        if payload.isEmpty { return nil }
        // Whole topic levels, safe in PostgreSQL, the pages and the log (docs/FLEET.md, Words).
        guard FleetID.isValid(site), named != nil else { throw refuse(.malformed, "the topic's site or cabinet is not an id (1 to 64 of a-z 0-9 _ -)") }
        guard payload.count <= maxBytes else { throw refuse(.tooLarge, "\(payload.count) bytes, more than ingest.max_message_bytes (\(maxBytes))") }
        // PostgreSQL's text and jsonb hold no NUL: such a payload could never be stored.
        guard !payload.contains(0), !Self.escapesNUL(payload) else { throw refuse(.malformed, "holds a NUL character") }
        // The contract's payloads nest a few levels; a decoder given thousands recurses as deep.
        guard !Self.nestsDeeperThan(32, payload) else { throw refuse(.malformed, "nests deeper than 32 levels") }
        let text = String(decoding: payload, as: UTF8.self)
        guard let object = JSON.parse(text)?.object else { throw refuse(.malformed, "not a JSON object") }
        guard let v = object["v"]?.int else { throw refuse(.malformed, "no contract version 'v'") }
        guard v == 1 else { throw refuse(.version, "contract version \(v) is not known here (v1)") }
        guard let payloadCabinet = object["cabinet"]?.string else { throw refuse(.malformed, "no 'cabinet'") }
        guard payloadCabinet == cabinet else { throw refuse(.wrongCabinet, "the payload names cabinet \(LogText.quoted(payloadCabinet, limit: 64)), the topic '\(cabinet)' (F3)") }
        switch name {
        case "event":
            guard let seq = object["seq"]?.int, seq >= 1 else { throw refuse(.malformed, "no seq ≥ 1") }
            // The contract's range: a seq past it cannot come from a ledger, and near Int64.max
            // it would make the fleet's own arithmetic overflow.
            guard seq <= FleetLimits.maxSeq else { throw refuse(.seqRange, "seq \(seq) is beyond the contract's range (below 2^53)") }
            guard let event = object["event"], event.object != nil else { throw refuse(.malformed, "no 'event' object") }
            guard event["seq"]?.int == seq else { throw refuse(.malformed, "event.seq differs from seq \(seq)") }
            guard let kind = event["kind"]?.string, !kind.isEmpty else { throw refuse(.malformed, "event \(seq) has no kind") }
            guard let time = event["time"]?.double else { throw refuse(.malformed, "event \(seq) has no time") }
            // Money is summed from value_minor: one coin's value, a whole number of minor units
            // in 0 … FleetLimits.maxCoinMinor, or nothing.
            if let value = event["value_minor"] {
                guard case .int(let minor) = value else { throw refuse(.valueRange, "event \(seq)'s value_minor \(LogText.quoted(value.description, limit: 40)) is not a whole number of minor units") }
                guard (0...FleetLimits.maxCoinMinor).contains(minor) else {
                    throw refuse(.valueRange, "event \(seq)'s value_minor \(minor) is not one coin's value (0 … \(FleetLimits.maxCoinMinor) minor units)")
                }
            }
            // A collection's rows are sums of coins: each in 0 … FleetLimits.maxSumMinor.
            for key in ["collected", "unconfirmed"] {
                guard let rows = event[key] else { continue }
                guard let list = rows.array else { throw refuse(.malformed, "event \(seq)'s \(key) is not a list of totals rows") }
                for row in list {
                    guard let minor = row["value_minor"]?.int, (0...FleetLimits.maxSumMinor).contains(minor) else {
                        throw refuse(.valueRange, "event \(seq)'s \(key) holds a row whose value_minor is not a sum of coins (0 … 2^53 − 1 minor units)")
                    }
                }
            }
            // The message as it came: PostgreSQL takes the daemon's event out of it (`->'event'`),
            // in C and on the database's core, rather than this thread writing it again.
            return .event(Event(cabinet: cabinet, site: site, seq: seq, kind: kind, time: time, json: text, published: object["published"]?.double))
        case "state":
            guard let state = object["state"]?.string, state == "online" || state == "offline" else { throw refuse(.malformed, "state is not online or offline") }
            return .state(State(cabinet: cabinet, site: site, online: state == "online", reason: object["reason"]?.string,
                                time: object["time"]?.double, bridgeVersion: object["bridge_version"]?.string,
                                daemonVersion: object["daemon_version"]?.string, heartbeat: object["heartbeat_s"]?.double.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }))
        case "status":
            return .status(cabinet: cabinet, site: site, json: text)
        case "totals":
            return .totals(cabinet: cabinet, site: site, json: text)
        default:
            guard let id = object["id"]?.string, let command = object["cmd"]?.string, let ok = object["ok"]?.bool else {
                throw refuse(.malformed, "a reply needs id, cmd and ok")
            }
            guard name == "reply/\(id)" else { throw refuse(.malformed, "the reply's id \(LogText.quoted(id, limit: 64)) is not its topic's") }
            let ranges = object["result"]?["missing"]?.array ?? []
            guard ranges.count <= 1000 else { throw refuse(.malformed, "missing holds \(ranges.count) ranges, more than 1,000") }
            var missing: [ClosedRange<Int64>] = []
            for range in ranges {
                guard let pair = range.array, pair.count == 2, let a = pair[0].int, let b = pair[1].int, a >= 1, a <= b, b <= FleetLimits.maxSeq else {
                    throw refuse(.malformed, "missing holds a bad range (two seqs, 1 ≤ from ≤ to < 2^53)")
                }
                missing.append(a...b)
            }
            return .reply(Reply(cabinet: cabinet, site: site, id: id, command: command, ok: ok, missing: missing,
                                errorCode: object["error"]?["code"]?.string, json: text))
        }
    }
}
