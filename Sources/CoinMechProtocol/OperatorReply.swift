import CoinMechModel

/// The replies to the operators' control commands, typed (docs/PROTOCOL.md), each paired with
/// its `OperatorCommand`: the daemon builds one and writes its `json`; a client reads it back
/// with `init(json:)`, which refuses a reply that lacks what the command answers with. Their
/// keys are here and nowhere else, so the daemon, coinctl and the tests read one shape.
public protocol OperatorReply: DaemonMessage {}

/// What the daemon writes to a client and the client reads back as a type: a reply, or a
/// subscription's message (`SubscriptionMessage`).
public protocol DaemonMessage: Sendable, Equatable {
    /// Reads the message; throws when a field it must have is missing or of the wrong kind.
    init(json: JSON) throws(ReplyError)
    var json: JSON { get }
}

/// A reply that is not what its command answers with: the daemon spoke another protocol.
public struct ReplyError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Reading a reply's fields, each with what its absence means.
struct ReplyFields {
    let object: [String: JSON]
    let what: String

    /// "a" or "an", as `what` begins.
    var article: String { Self.article(what) }

    static func article(_ what: String) -> String { what.first.map { "aeiou".contains($0) } == true ? "an" : "a" }

    init(_ json: JSON, _ what: String) throws(ReplyError) {
        guard let object = json.object else { throw ReplyError("\(Self.article(what)) \(what) reply is not an object: \(json)") }
        self.object = object
        self.what = what
    }

    func int(_ key: String) throws(ReplyError) -> Int64 {
        guard let value = object[key]?.int else { throw ReplyError("\(article) \(what) reply has no whole number \"\(key)\"") }
        return value
    }

    func string(_ key: String) throws(ReplyError) -> String {
        guard let value = object[key]?.string else { throw ReplyError("\(article) \(what) reply has no string \"\(key)\"") }
        return value
    }

    func bool(_ key: String) throws(ReplyError) -> Bool {
        guard let value = object[key]?.bool else { throw ReplyError("\(article) \(what) reply has no true or false \"\(key)\"") }
        return value
    }

    func array(_ key: String) throws(ReplyError) -> [JSON] {
        guard let value = object[key]?.array else { throw ReplyError("\(article) \(what) reply has no list \"\(key)\"") }
        return value
    }

    func double(_ key: String) throws(ReplyError) -> Double {
        guard let value = object[key]?.double else { throw ReplyError("\(article) \(what) reply has no number \"\(key)\"") }
        return value
    }

    func object(_ key: String) throws(ReplyError) -> JSON {
        guard let value = object[key], value.object != nil else { throw ReplyError("\(article) \(what) reply has no object \"\(key)\"") }
        return value
    }

    func strings(_ key: String) throws(ReplyError) -> [String] {
        let values = try array(key)
        let strings = values.compactMap(\.string)
        guard strings.count == values.count else { throw ReplyError("\(article) \(what) reply's \"\(key)\" is not a list of strings") }
        return strings
    }

    /// Absent or null is nil; anything else must be a number.
    func optionalDouble(_ key: String) throws(ReplyError) -> Double? {
        guard let field = object[key], field != .null else { return nil }
        guard let value = field.double else { throw ReplyError("\(article) \(what) reply's \"\(key)\" is not a number") }
        return value
    }

    /// Absent or null is nil; anything else must be an object.
    func optionalObject(_ key: String) throws(ReplyError) -> JSON? {
        guard let field = object[key], field != .null else { return nil }
        guard field.object != nil else { throw ReplyError("\(article) \(what) reply's \"\(key)\" is not an object") }
        return field
    }

    /// Absent or null is nil; anything else must be a whole number.
    func optionalInt(_ key: String) throws(ReplyError) -> Int64? {
        guard let field = object[key], field != .null else { return nil }
        guard let value = field.int else { throw ReplyError("\(article) \(what) reply's \"\(key)\" is not a whole number") }
        return value
    }

    func optionalString(_ key: String) throws(ReplyError) -> String? {
        guard let field = object[key], field != .null else { return nil }
        guard let value = field.string else { throw ReplyError("\(article) \(what) reply's \"\(key)\" is not a string") }
        return value
    }
}

/// `inhibit`: whether the mech is inhibited now, and the event that recorded it.
public struct InhibitReply: OperatorReply {
    public var inhibited: Bool
    public var seq: Int64

    public init(inhibited: Bool, seq: Int64) {
        self.inhibited = inhibited
        self.seq = seq
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "inhibit")
        self.init(inhibited: try f.bool("inhibited"), seq: try f.int("seq"))
    }

    public var json: JSON { ["inhibited": .bool(inhibited), "seq": .int(seq)] }
}

/// `collect`: the period's totals as collected, and its unconfirmed coins (audit, not credit).
public struct CollectReply: OperatorReply {
    public var seq: Int64
    public var collected: [TotalsRow]
    public var unconfirmed: [TotalsRow]

    public init(seq: Int64, collected: [TotalsRow], unconfirmed: [TotalsRow]) {
        self.seq = seq
        self.collected = collected
        self.unconfirmed = unconfirmed
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "collect")
        var rows: [[TotalsRow]] = []
        for key in ["collected", "unconfirmed"] {
            var list: [TotalsRow] = []
            for row in (key == "collected" ? try f.array(key) : f.object[key]?.array ?? []) { list.append(try TotalsRow(json: row)) }
            rows.append(list)
        }
        self.init(seq: try f.int("seq"), collected: rows[0], unconfirmed: rows[1])
    }

    public var json: JSON { ["seq": .int(seq), "collected": .array(collected.map(\.json)), "unconfirmed": .array(unconfirmed.map(\.json))] }
}

extension TotalsRow {
    /// A row as `totals` and `collect` write it.
    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "totals row")
        guard let weight = f.object["weight_g"]?.double else { throw ReplyError("a totals row has no number \"weight_g\"") }
        self.init(currency: try f.string("currency"), denomination: try f.string("denomination"), count: try f.int("count"),
                  valueMinor: try f.int("value_minor"), weightG: weight)
    }
}

/// `reload`: the chain now deciding.
public struct ReloadReply: OperatorReply {
    public var generation: Int64
    public var fingerprint: String
    /// `name=plugin@version` per link, in chain order.
    public var links: [String]
    public var seq: Int64

    public init(generation: Int64, fingerprint: String, links: [String], seq: Int64) {
        self.generation = generation
        self.fingerprint = fingerprint
        self.links = links
        self.seq = seq
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "reload")
        self.init(generation: try f.int("generation"), fingerprint: try f.string("fingerprint"), links: try f.array("links").compactMap(\.string),
                  seq: try f.int("seq"))
    }

    public var json: JSON {
        ["generation": .int(generation), "fingerprint": .string(fingerprint), "links": .array(links.map(JSON.string)), "seq": .int(seq)]
    }
}

/// `teach_start`: what is taught, through which link and file.
public struct TeachStartReply: OperatorReply {
    public var seq: Int64
    public var currency: String
    public var code: String
    public var coins: Int64
    public var link: String
    public var file: String

    public init(seq: Int64, currency: String, code: String, coins: Int64, link: String, file: String) {
        self.seq = seq
        self.currency = currency
        self.code = code
        self.coins = coins
        self.link = link
        self.file = file
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "teach_start")
        self.init(seq: try f.int("seq"), currency: try f.string("currency"), code: try f.string("code"), coins: try f.int("coins"),
                  link: try f.string("link"), file: try f.string("file"))
    }

    public var json: JSON {
        ["seq": .int(seq), "currency": .string(currency), "code": .string(code), "coins": .int(coins), "link": .string(link), "file": .string(file)]
    }
}

/// `teach_commit`: the taught window, the file it is in, and the reload that put it to work.
public struct TeachCommitReply: OperatorReply {
    public var seq: Int64
    public var currency: String
    public var code: String
    public var samples: Int64
    public var leftOut: Int64
    public var file: String
    public var sha256: String
    /// Per axis taught (`diameter`, `weight`, `thickness`): "mean±σ".
    public var axes: [String: String]
    /// The reload that followed (nil until it is in: the daemon adds it).
    public var reload: ReloadReply?

    public static let axisNames = ["diameter", "weight", "thickness"]

    public init(seq: Int64, currency: String, code: String, samples: Int64, leftOut: Int64, file: String, sha256: String, axes: [String: String],
                reload: ReloadReply? = nil) {
        self.seq = seq
        self.currency = currency
        self.code = code
        self.samples = samples
        self.leftOut = leftOut
        self.file = file
        self.sha256 = sha256
        self.axes = axes
        self.reload = reload
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "teach_commit")
        var axes: [String: String] = [:]
        for axis in Self.axisNames { if let summary = f.object[axis]?.string { axes[axis] = summary } }
        self.init(seq: try f.int("seq"), currency: try f.string("currency"), code: try f.string("code"), samples: try f.int("samples"),
                  leftOut: try f.int("left_out"), file: try f.string("file"), sha256: try f.string("sha256"), axes: axes,
                  reload: try f.object["reload"].map { (json: JSON) throws(ReplyError) in try ReloadReply(json: json) })
    }

    public var json: JSON {
        var object: [String: JSON] = [
            "seq": .int(seq), "currency": .string(currency), "code": .string(code), "samples": .int(samples), "left_out": .int(leftOut),
            "file": .string(file), "sha256": .string(sha256),
        ]
        for (axis, summary) in axes { object[axis] = .string(summary) }
        if let reload { object["reload"] = reload.json }
        return .object(object)
    }
}

/// `teach_abort`: what was set aside.
public struct TeachAbortReply: OperatorReply {
    public var seq: Int64
    public var currency: String
    public var code: String
    public var samples: Int64

    public init(seq: Int64, currency: String, code: String, samples: Int64) {
        self.seq = seq
        self.currency = currency
        self.code = code
        self.samples = samples
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "teach_abort")
        self.init(seq: try f.int("seq"), currency: try f.string("currency"), code: try f.string("code"), samples: try f.int("samples"))
    }

    public var json: JSON { ["seq": .int(seq), "currency": .string(currency), "code": .string(code), "samples": .int(samples)] }
}

/// Coins of one kind paid, or that a plan would pay.
public struct PaidCoins: Sendable, Equatable {
    /// The device's unit (a changer's coin type, a hopper's place); nil in a plan.
    public var type: Int64?
    public var coinID: String?
    public var valueMinor: Int64
    public var count: Int64

    public init(type: Int64?, coinID: String?, valueMinor: Int64, count: Int64) {
        self.type = type
        self.coinID = coinID
        self.valueMinor = valueMinor
        self.count = count
    }

    init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "coins")
        self.init(type: try f.optionalInt("type"), coinID: try f.optionalString("coin_id"), valueMinor: try f.int("value_minor"), count: try f.int("count"))
    }

    var json: JSON {
        var object: [String: JSON] = ["coin_id": coinID.map(JSON.string) ?? .null, "value_minor": .int(valueMinor), "count": .int(count)]
        if let type { object["type"] = .int(type) }
        return .object(object)
    }
}

/// `payout`: how the payout under its request id stands.
public struct PayoutReply: OperatorReply {
    public enum State: String, Sendable {
        /// Settled: the whole amount paid.
        case done
        /// Settled: some paid, the rest owed (`debtMinor`).
        case partial
        /// Settled: nothing paid, the whole amount owed.
        case failed
        /// Under way, or left open until the device can be counted: ask again with the id.
        case open
        /// Nothing journalled, nothing moved: no set of the coins held makes the amount.
        case refused
    }

    public var requestID: String
    public var state: State
    public var amountMinor: Int64
    public var currency: String
    /// Answered from the ledger: the request id was asked before.
    public var repeated: Bool
    public var paidMinor: Int64?
    public var debtMinor: Int64?
    public var afterRestart: Bool?
    public var reason: String?
    /// The settling event.
    public var seq: Int64?
    public var coins: [PaidCoins] = []
    /// A refusal's nearest amounts that can be paid.
    public var nearestBelow: Int64?
    public var nearestAbove: Int64?

    public init(requestID: String, state: State, amountMinor: Int64, currency: String, repeated: Bool) {
        self.requestID = requestID
        self.state = state
        self.amountMinor = amountMinor
        self.currency = currency
        self.repeated = repeated
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "payout")
        guard let state = State(rawValue: try f.string("state")) else { throw ReplyError("a payout reply's state \(f.object["state"]!) is not one the protocol knows") }
        self.init(requestID: try f.string("request_id"), state: state, amountMinor: try f.int("amount_minor"), currency: try f.string("currency"),
                  repeated: f.object["repeated"]?.bool ?? false)
        paidMinor = try f.optionalInt("paid_minor")
        debtMinor = try f.optionalInt("debt_minor")
        afterRestart = f.object["after_restart"]?.bool
        reason = try f.optionalString("reason")
        seq = try f.optionalInt("seq")
        for coin in f.object["coins"]?.array ?? [] { coins.append(try PaidCoins(json: coin)) }
        nearestBelow = try f.optionalInt("nearest_below")
        nearestAbove = try f.optionalInt("nearest_above")
    }

    public var json: JSON {
        var object: [String: JSON] = ["request_id": .string(requestID), "state": .string(state.rawValue), "amount_minor": .int(amountMinor),
                                      "currency": .string(currency), "repeated": .bool(repeated)]
        if let paidMinor { object["paid_minor"] = .int(paidMinor) }
        if let debtMinor { object["debt_minor"] = .int(debtMinor) }
        if let afterRestart { object["after_restart"] = .bool(afterRestart) }
        if let reason { object["reason"] = .string(reason) }
        if let seq { object["seq"] = .int(seq) }
        if state != .open && state != .refused { object["coins"] = .array(coins.map(\.json)) }
        if state == .refused {
            object["nearest_below"] = nearestBelow.map(JSON.int) ?? .null
            object["nearest_above"] = nearestAbove.map(JSON.int) ?? .null
        }
        return .object(object)
    }
}

/// `payout_plan`: how the device would pay an amount now, or the nearest amounts it can.
public struct PayoutPlanReply: OperatorReply {
    public var amountMinor: Int64
    public var currency: String
    public var payable: Bool
    public var coins: [PaidCoins] = []
    public var nearestBelow: Int64?
    public var nearestAbove: Int64?

    public init(amountMinor: Int64, currency: String, payable: Bool) {
        self.amountMinor = amountMinor
        self.currency = currency
        self.payable = payable
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "payout_plan")
        self.init(amountMinor: try f.int("amount_minor"), currency: try f.string("currency"), payable: try f.bool("payable"))
        for coin in f.object["coins"]?.array ?? [] { coins.append(try PaidCoins(json: coin)) }
        nearestBelow = try f.optionalInt("nearest_below")
        nearestAbove = try f.optionalInt("nearest_above")
    }

    public var json: JSON {
        var object: [String: JSON] = ["amount_minor": .int(amountMinor), "currency": .string(currency), "payable": .bool(payable)]
        if payable {
            object["coins"] = .array(coins.map(\.json))
        } else {
            object["reason"] = "cannot_pay_exact"
            object["nearest_below"] = nearestBelow.map(JSON.int) ?? .null
            object["nearest_above"] = nearestAbove.map(JSON.int) ?? .null
        }
        return .object(object)
    }
}

/// `refill` and `float`: the unit's level before and after, and the event that recorded it.
public struct InventoryReply: OperatorReply {
    public var unit: Int64
    public var coinID: String?
    public var levelBefore: Int64
    public var level: Int64
    public var seq: Int64
    public var requestID: String
    /// Recorded by an earlier ask under the same request id: not counted again.
    public var repeated: Bool

    public init(unit: Int64, coinID: String?, levelBefore: Int64, level: Int64, seq: Int64, requestID: String, repeated: Bool) {
        self.unit = unit
        self.coinID = coinID
        self.levelBefore = levelBefore
        self.level = level
        self.seq = seq
        self.requestID = requestID
        self.repeated = repeated
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "inventory")
        self.init(unit: try f.int("unit"), coinID: try f.optionalString("coin_id"), levelBefore: try f.int("level_before"), level: try f.int("level"),
                  seq: try f.int("seq"), requestID: try f.string("request_id"), repeated: try f.bool("repeated"))
    }

    public var json: JSON {
        ["unit": .int(unit), "coin_id": coinID.map(JSON.string) ?? .null, "level_before": .int(levelBefore), "level": .int(level), "seq": .int(seq),
         "request_id": .string(requestID), "repeated": .bool(repeated)]
    }
}

/// `totals`: credit since the last collection and over the lifetime, with the accepts pending
/// and unconfirmed for audit.
extension Totals: OperatorReply {
    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "totals")
        var periods: [[TotalsRow]] = []
        for key in ["current", "lifetime", "pending", "unconfirmed"] {
            var rows: [TotalsRow] = []
            // An older daemon sends no pending or unconfirmed rows.
            for row in (key == "current" || key == "lifetime" ? try f.array(key) : f.object[key]?.array ?? []) { rows.append(try TotalsRow(json: row)) }
            periods.append(rows)
        }
        self.init(current: periods[0], lifetime: periods[1], pending: periods[2], unconfirmed: periods[3])
    }
}
