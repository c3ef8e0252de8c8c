import CoinMechModel
import Foundation

extension LedgerEvent {
    /// The event as the protocol sends it: snake_case keys, absent fields left out, and the
    /// detail as an object.
    public var json: JSON {
        var object: [String: JSON] = ["seq": .int(seq), "time": .double(time), "kind": .string(kind)]
        func put(_ key: String, _ value: JSON?) { if let value { object[key] = value } }
        put("source", source.map(JSON.string))
        put("epoch", epoch.map(JSON.int))
        put("device_seq", deviceSeq.map(JSON.int))
        put("diameter_mm", diameterMM.map(JSON.double))
        put("weight_g", weightG.map(JSON.double))
        put("thickness_mm", thicknessMM.map(JSON.double))
        put("channel", channel.map(JSON.int))
        put("conductivity_low_iacs", conductivityLowIACS.map(JSON.double))
        put("conductivity_high_iacs", conductivityHighIACS.map(JSON.double))
        put("permeability", permeability.map(JSON.double))
        put("verdict", verdict.map(JSON.string))
        put("currency", currency.map(JSON.string))
        put("denomination", denomination.map(JSON.string))
        put("value_minor", valueMinor.map(JSON.int))
        put("link", link.map(JSON.string))
        put("reason", reason.map(JSON.string))
        put("message", message.map(JSON.string))
        put("chain_generation", chainGeneration.map(JSON.int))
        put("state", state.map(JSON.string))
        put("ref_seq", refSeq.map(JSON.int))
        if let detail, let parsed = JSON.parse(detail) { object["detail"] = parsed }
        if let collected { object["collected"] = .array(collected.map(\.json)) }
        if let collectedUnconfirmed, !collectedUnconfirmed.isEmpty { object["unconfirmed"] = .array(collectedUnconfirmed.map(\.json)) }
        return .object(object)
    }
}

extension TotalsRow {
    public var json: JSON {
        ["currency": .string(currency), "denomination": .string(denomination), "count": .int(count),
         "value_minor": .int(valueMinor), "weight_g": .double((weightG * 1000).rounded() / 1000)]
    }
}

extension Totals {
    public var json: JSON {
        func values(_ rows: [TotalsRow]) -> JSON { .object(Totals.value(of: rows).mapValues(JSON.int)) }
        return [
            "current": .array(current.map(\.json)), "lifetime": .array(lifetime.map(\.json)),
            "current_value": values(current), "lifetime_value": values(lifetime),
            "pending": .array(pending.map(\.json)), "pending_value": values(pending),
            "unconfirmed": .array(unconfirmed.map(\.json)), "unconfirmed_value": values(unconfirmed),
        ]
    }
}

extension LedgerEvent {
    /// Reads an event as the protocol sends it (`events`, a subscription's `event` messages): the
    /// fields every event has must be there; each optional one, when present, of its kind.
    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "event")
        self.init(
            seq: try f.int("seq"), time: try f.double("time"), kind: try f.string("kind"), source: try f.optionalString("source"),
            epoch: try f.optionalInt("epoch"), deviceSeq: try f.optionalInt("device_seq"), diameterMM: try f.optionalDouble("diameter_mm"),
            weightG: try f.optionalDouble("weight_g"), thicknessMM: try f.optionalDouble("thickness_mm"), channel: try f.optionalInt("channel"),
            verdict: try f.optionalString("verdict"), currency: try f.optionalString("currency"), denomination: try f.optionalString("denomination"),
            valueMinor: try f.optionalInt("value_minor"), link: try f.optionalString("link"), reason: try f.optionalString("reason"),
            message: try f.optionalString("message"), chainGeneration: try f.optionalInt("chain_generation"),
            detail: try f.optionalObject("detail")?.description, state: try f.optionalString("state"), refSeq: try f.optionalInt("ref_seq"))
        conductivityLowIACS = try f.optionalDouble("conductivity_low_iacs")
        conductivityHighIACS = try f.optionalDouble("conductivity_high_iacs")
        permeability = try f.optionalDouble("permeability")
        func rows(_ key: String) throws(ReplyError) -> [TotalsRow]? {
            guard let field = f.object[key], field != .null else { return nil }
            guard let list = field.array else { throw ReplyError("an event's \"\(key)\" is not a list") }
            var rows: [TotalsRow] = []
            for row in list { rows.append(try TotalsRow(json: row)) }
            return rows
        }
        collected = try rows("collected")
        collectedUnconfirmed = try rows("unconfirmed")
    }

    /// The event's detail, read (nil when it has none or it is not an object).
    public var detailJSON: JSON? { detail.flatMap(JSON.parse).flatMap { $0.object == nil ? nil : $0 } }
}
