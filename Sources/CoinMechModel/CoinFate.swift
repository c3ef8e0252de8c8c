/// Where an accepted coin ended up, as the mech saw it.
public enum CoinFate: String, Sendable, Hashable, CaseIterable {
    /// Past the cash-box sensor: the host may credit it.
    case stored = "S"
    /// Back in the return cup: bounced, gate too late, or no answer in time.
    case returned = "R"
    /// The mech has no record of it (power lost between the gate and the cash box, or too old
    /// for its journal). Only a journal answer says this.
    case unknown = "U"
}
