/// What stops the bridge, in words an operator can act on.
public enum BridgeError: Error, Sendable, CustomStringConvertible {
    case cursor(path: String, String)
    case mqtt(String)
    case metrics(String)

    public var description: String {
        switch self {
        case .cursor(let path, let message): "cursor file \(path): \(message)"
        case .mqtt(let message): "MQTT: \(message)"
        case .metrics(let message): "metrics: \(message)"
        }
    }
}
