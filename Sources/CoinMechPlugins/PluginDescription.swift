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
}
