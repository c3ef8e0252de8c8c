import CoinFacts

/// Why a coin is returned.
public struct Rejection: Sendable, Hashable, CustomStringConvertible {
    /// Machine-readable reason, e.g. "unrecognized", "not_finite", "repeat".
    public var reason: String
    /// A sentence for people.
    public var message: String

    public init(reason: String, message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { message.isEmpty ? reason : "\(reason): \(message)" }
}

/// The final answer for a coin: keep it or give it back.
public enum Verdict: Sendable, Hashable {
    case accept(Denomination)
    case reject(Rejection)

    public var isAccept: Bool {
        if case .accept = self { return true }
        return false
    }
}

/// What one link answers: a verdict, or `pass` to ask the next link.
public enum LinkVerdict: Sendable, Hashable {
    case pass
    case decided(Verdict)
}
