/// What libmosquitto refused, in words an operator can act on.
public struct MQTTError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
