/// What becomes of a customer's credit nobody has used for a while (`source.standing_credit`):
/// a customer who walked away leaves it standing, and the operator decides whether it waits for
/// the next customer, goes to the cash box, or is paid back as change. Each is recorded as an
/// event (`credit_expired`, or `credit_returned` with its payout).
public enum StandingCredit: Sendable, Hashable {
    /// It stays until a sale or a cancel uses it (the default).
    case keep
    /// Untouched for `afterSeconds`, it goes to the cash box whole (`credit_expired`).
    case expire(afterSeconds: Double)
    /// Untouched for `afterSeconds`, it is paid back as change, as a cancel would.
    case payBack(afterSeconds: Double)

    /// How long it must stand untouched before the rule applies; nil: never.
    public var afterSeconds: Double? {
        switch self {
        case .keep: nil
        case .expire(let after), .payBack(let after): after
        }
    }
}
