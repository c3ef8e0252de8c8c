/// What stops the fleet service, in words an operator can act on.
public enum FleetError: Error, Sendable, CustomStringConvertible {
    case database(String)
    case mqtt(String)
    case http(String)

    public var description: String {
        switch self {
        case .database(let message): "database: \(message)"
        case .mqtt(let message): "MQTT: \(message)"
        case .http(let message): "dashboard: \(message)"
        }
    }
}
