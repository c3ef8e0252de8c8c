import Foundation

/// A configuration error a plugin reports from `create`; the host shows the message.
public struct PluginConfigError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A plugin's configuration: decoded from the link's JSON table, with unknown keys refused.
public protocol PluginConfiguration: Decodable {
    /// Every key the plugin understands; anything else is an error (a typo must not pass silently).
    static var keys: Set<String> { get }
}

extension PluginConfiguration {
    /// Decodes `json`, naming the offending key in any error.
    public static func decode(_ json: String) throws(PluginConfigError) -> Self {
        let data = Data(json.utf8)
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw PluginConfigError("configuration is not valid JSON")
        }
        guard let table = object as? [String: Any] else { throw PluginConfigError("configuration must be a table") }
        if let unknown = table.keys.sorted().first(where: { !keys.contains($0) }) {
            throw PluginConfigError("unknown key '\(unknown)' (known: \(keys.sorted().joined(separator: ", ")))")
        }
        do {
            return try JSONDecoder().decode(Self.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw PluginConfigError("missing key '\(path(context.codingPath + [key]))'")
        } catch let DecodingError.typeMismatch(type, context) {
            throw PluginConfigError("key '\(path(context.codingPath))' must be \(describe(type))")
        } catch let DecodingError.valueNotFound(type, context) {
            throw PluginConfigError("key '\(path(context.codingPath))' must be \(describe(type)), not null")
        } catch let DecodingError.dataCorrupted(context) {
            throw PluginConfigError("key '\(path(context.codingPath))': \(context.debugDescription)")
        } catch {
            throw PluginConfigError("\(error)")
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is Double.Type, is Int.Type, is Int64.Type, is UInt32.Type: "a number"
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        default: "a \(type)"
        }
    }
}

/// Checks that a number lies in a range, with a message naming the key.
public func require(_ value: Double, in range: ClosedRange<Double>, key: String) throws(PluginConfigError) {
    guard value.isFinite, range.contains(value) else {
        throw PluginConfigError("key '\(key)' must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
    }
}

/// Encodes a value as JSON text for `describe`.
public func jsonText(_ value: some Encodable) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
}
