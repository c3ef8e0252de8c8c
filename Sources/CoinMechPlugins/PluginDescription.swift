import Foundation

/// Reads what a plugin's `describe` returned.
public enum PluginDescription {
    /// The strings of its "warnings" array, if any.
    public static func warnings(in description: String?) -> [String] {
        guard let description,
              let object = try? JSONSerialization.jsonObject(with: Data(description.utf8)) as? [String: Any],
              let warnings = object["warnings"] as? [String] else { return [] }
        return warnings
    }

    /// The currencies a link says it credits: its description's `"currency"` (a code) or
    /// `"currencies"` (a list), and the currencies of its `"credits"` (a coin-id link). Codes
    /// that are not three capital letters are ignored.
    public static func currencies(in description: String?) -> [String] {
        guard let description,
              let object = try? JSONSerialization.jsonObject(with: Data(description.utf8)) as? [String: Any] else { return [] }
        var found: [String] = []
        if let one = object["currency"] as? String { found.append(one) }
        found += object["currencies"] as? [String] ?? []
        if let credits = object["credits"] as? [String: Any] {
            found += credits.values.compactMap { ($0 as? [String: Any])?["currency"] as? String }.sorted()
        }
        var unique: [String] = []
        for code in found where code.utf8.count == 3 && code.utf8.allSatisfy({ (65...90).contains($0) }) && !unique.contains(code) { unique.append(code) }
        return unique
    }
}
