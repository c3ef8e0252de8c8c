/// A problem in a settings file (configuration or scenario), naming the file, the line where
/// known, and the key.
public struct SettingsError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    /// Dotted path of the key, e.g. `chain[2].plugin`; empty for whole-file problems.
    public var key: String
    public var message: String

    public init(file: String, line: Int?, key: String, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        let place = line.map { "\(file):\($0)" } ?? file
        return key.isEmpty ? "\(place): \(message)" : "\(place): key '\(key)': \(message)"
    }
}
