/// Why an EVA-DTS export cannot be written, in words an operator can act on.
public struct DEXError: Error, Sendable, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
