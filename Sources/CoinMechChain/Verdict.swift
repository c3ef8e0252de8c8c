/// A denomination a validator recognised.
public struct Denomination: Sendable, Hashable, CustomStringConvertible {
    /// ISO 4217 code, e.g. "USD".
    public var currency: String
    /// Code within the currency, e.g. "quarter".
    public var code: String
    /// Value in minor units (cents).
    public var valueMinor: Int64

    public init(currency: String, code: String, valueMinor: Int64) {
        self.currency = currency
        self.code = code
        self.valueMinor = valueMinor
    }

    public var description: String { "\(currency) \(code) (\(valueMinor))" }
}

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
