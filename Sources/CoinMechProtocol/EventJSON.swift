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
