import Foundation

extension SettingsTable {
    /// A server's address setting: `host:port` (`127.0.0.1:9786`, `[::1]:9786`) or `off`.
    public enum Listen: Sendable, Equatable {
        case off
        case address(host: String, port: Int)
    }

    /// The `host:port` or `off` at `key`; nil when absent. `example` names a good value in the error.
    public func listen(_ key: String, example: String) throws(SettingsError) -> Listen? {
        guard let text = try string(key) else { return nil }
        if text == "off" { return .off }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port), colon != text.startIndex else {
            throw error(key, "'\(text)' is not host:port (e.g. \(example)), or off")
        }
        return .address(host: String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port)
    }
}
