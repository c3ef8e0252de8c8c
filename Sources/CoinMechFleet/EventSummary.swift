import Foundation

/// One line a person reads for a stored event: `USD_25 25 credited`, `reject by sanity: too light`.
enum EventSummary {
    static func text(_ json: String) -> String {
        guard let event = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else { return "" }
        let kind = event["kind"] as? String ?? ""
        let denomination = event["denomination"] as? String
        let value = event["value_minor"].map { "\($0)" }
        let detail = (event["detail"] as? [String: Any])?.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        switch kind {
        case "decision":
            let verdict = event["verdict"] as? String ?? "?"
            if verdict == "accept" { return "accept \(denomination ?? "") by \(event["link"] as? String ?? "?")" }
            return "reject by \(event["link"] as? String ?? "?"): \(event["reason"] as? String ?? "")"
        case "coin": return "\(denomination ?? "?") \(value ?? "?") credited (decision \(event["ref_seq"].map { "\($0)" } ?? "?"))"
        case "coin_returned", "coin_unconfirmed": return "\(denomination ?? "?") \(value ?? "?") (decision \(event["ref_seq"].map { "\($0)" } ?? "?"))"
        default: return [event["source"] as? String, event["message"] as? String, detail].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " · ")
        }
    }
}
