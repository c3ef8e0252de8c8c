/// How an accept becomes credit.
public enum CreditRule: Sendable, Hashable {
    /// Pending until the mech confirms the coin was stored (`$CMC,…,S`).
    case onConfirmation
    /// Credited with the decision: the mech's report already means "stored" (a pulse), or the
    /// mech cannot confirm (then the answer is taken for the coin).
    case atOnce
}
