import CoinMechChain

/// Kinds of ledger events. Decisions and operator actions share one sequence (`seq`).
public enum EventKind: String, Sendable, Codable, CaseIterable {
    case decision
    /// The mech reported a status (`jam`, `tamper`, `ok`); detail `status`, `detail`.
    case mechStatus = "mech_status"
    /// The mech powered up: device sequence numbers restart; detail `epoch`, `implied`.
    case mechPowerUp = "mech_power_up"
    case sourceConnected = "source_connected"
    case sourceLost = "source_lost"
    case startup
    case shutdown
    case inhibit
    case collect
    case reload
    case reloadFailed = "reload_failed"
    /// The ledger could not write for a while and then could again; detail `failed_for_s`.
    case ledgerRecovered = "ledger_recovered"
    /// An accept reached the mech after its deadline (the commit overran): the mech returned
    /// a coin the ledger credits. Detail `epoch`, `devseq`, `late_by_ms`.
    case lateAnswer = "late_answer"
}

/// Something to record.
public enum LedgerEntry: Sendable {
    /// A reading and its decision; (`source`, `epoch`, `deviceSeq`) identifies the coin.
    case decision(source: String, epoch: Int64, reading: Reading, decision: Decision)
    /// An event; for `mechPowerUp` with an `epoch` detail, the source's epoch is updated too.
    case event(EventKind, source: String?, detail: [String: String] = [:])
    /// Closes the cash-box period: records a `collect` event whose detail holds `by` and the
    /// period's totals (`collected`, JSON), and resets the current period. Lifetime totals stay.
    case collect(by: String)
}
