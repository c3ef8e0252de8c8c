import CoinMechModel
import CoinMechSettings

/// `source.standing_credit`: what becomes of a customer's credit nobody used for a while
/// (docs/CONFIG.md). `{rule: keep}` (the default), or `{rule: expire | pay_back, after_s: N}`.
enum StandingCreditSettings {
    /// From a minute (a walk-away at a kiosk) to a week.
    static let afterSeconds: ClosedRange<Double> = 60...604_800

    static func parse(_ source: SettingsTable) throws(SettingsError) -> StandingCredit {
        guard let table = try source.table("standing_credit") else { return .keep }
        try table.rejectUnknownKeys(["rule", "after_s"])
        let rule = try table.string("rule") ?? "keep"
        let after = try table.double("after_s", in: afterSeconds)
        switch rule {
        case "keep":
            guard after == nil else { throw table.error("after_s", "does not apply to rule keep: the credit stays until it is used") }
            return .keep
        case "expire", "pay_back":
            guard let after else {
                throw table.error("after_s", "is required for rule \(rule): how long the credit stands untouched first, in seconds (\(Int(afterSeconds.lowerBound)) to \(Int(afterSeconds.upperBound)))")
            }
            return rule == "expire" ? .expire(afterSeconds: after) : .payBack(afterSeconds: after)
        default:
            throw table.error("rule", "must be keep, expire or pay_back, got '\(rule)'")
        }
    }
}
