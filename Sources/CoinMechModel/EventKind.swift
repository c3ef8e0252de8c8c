/// Kinds of ledger events. Decisions, credits and operator actions share one sequence (`seq`).
public enum EventKind: String, Sendable, Codable, CaseIterable {
    /// A reading and its verdict. An accept is `pending` until the mech confirms the coin.
    case decision
    /// An accepted coin the mech stored: customer credit. Moves the totals.
    case coin
    /// An accepted coin the mech returned after all (bounced, too late, lost power first).
    case coinReturned = "coin_returned"
    /// An accepted coin no confirmation can resolve: audit data, never credit.
    case coinUnconfirmed = "coin_unconfirmed"
    /// The mech reported a status (`jam`, `tamper`, `ok`); detail `status`, `detail`.
    case mechStatus = "mech_status"
    /// The mech powered up: device sequence numbers restart; detail `epoch`, `boot`, `implied`.
    case mechPowerUp = "mech_power_up"
    /// The mech named its boot number for the current epoch (answer to the host's hello);
    /// detail `epoch`, `boot`.
    case mechSession = "mech_session"
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
    /// An accept reached the mech after its deadline (the commit overran). With confirmations
    /// the coin stays pending and the mech's answer settles it. Detail `epoch`, `devseq`, `late_by_ms`.
    case lateAnswer = "late_answer"
    /// A link was taken out of service and the mech inhibited: it crashed too often in its plugin
    /// host, crashed the daemon, or overran its budget in process. Detail `link`, `state`
    /// (`quarantined` or `hung`), `cause`, `reason`, `generation`.
    case quarantined
    /// A reload with another plugin file or configuration put a quarantined link back; detail `link`.
    case quarantineLifted = "quarantine_lifted"
    /// Teach mode began (readings collected, every coin returned); detail `currency`, `code`,
    /// `coins`, `link`, `file`, `by`.
    case teachStart = "teach_start"
    /// A taught denomination was written to its calibration file; detail `currency`, `code`,
    /// `samples`, `left_out`, `file`, `sha256`, `diameter`, `weight`, `thickness` (mean±σ), `by`.
    case teachCommit = "teach_commit"
    /// Teach mode ended with nothing written; detail `currency`, `code`, `samples`, `by`.
    case teachAbort = "teach_abort"

    /// A coin acceptor (ccTalk) took a coin the chain did not credit: the cash box holds it.
    /// Detail `position`, `coin_id`, `reason`, `message`; `epoch`, `device_seq` name the event.
    case coinUncredited = "coin_uncredited"
    /// An error event of a coin acceptor's buffer: detail `code`, `name`, `message`, `rejected`.
    case cctalkError = "cctalk_error"
    /// An event in the acceptor's buffer before the daemon met it (never credit): detail `a`, `b`, `coin_id`.
    case cctalkBacklog = "cctalk_backlog"
    /// Events that fell out of the acceptor's buffer unread: detail `epoch`, `first`, `last`, `count`.
    case cctalkLost = "cctalk_lost"
    /// The acceptor's self-check reports a fault (it inhibits itself): detail `code`, `name`, `message`, `extra`.
    case acceptorFault = "acceptor_fault"
    case acceptorFaultCleared = "acceptor_fault_cleared"
    /// Who answered at the acceptor's address: detail `manufacturer`, `product`, `serial_number`, `software`, `coins`.
    case acceptorIdentified = "acceptor_identified"
    /// A report of the acceptor's was lost on the line and is not repeated (an MDB changer's
    /// POLL reply that never came): coins it held may have been kept without credit. Detail
    /// `after`, the number of the last coin reported before it.
    case acceptorReplyLost = "acceptor_reply_lost"
    /// A changer's tubes as it counted them, when they moved other than by a coin going in:
    /// detail `tubes` (count per coin type, `0:17,1:9`, empty tubes left out), `cause`
    /// (`payout`, `manual dispense`, `count` — a TUBE STATUS that differs, `start`).
    case tubesCounted = "tubes_counted"

    /// Money out, journalled before any coin moves (docs/LEDGER.md, payouts): a payout asked
    /// for, detail `request_id`, `amount_minor`, `currency`, `by`, `plan`.
    case payoutRequested = "payout_requested"
    /// One DISPENSE about to be sent: detail `request_id`, `step`, `type`, `coin_id`,
    /// `value_minor`, `count`, `tube_before`.
    case payoutDispensing = "payout_dispensing"
    /// A payout ended, by the changer's own count: detail `request_id`, `paid_minor`,
    /// `debt_minor`, `paid` (coins per type), `reason`, `after_restart`.
    case payoutDone = "payout_done"
    case payoutPartial = "payout_partial"
    case payoutFailed = "payout_failed"
    /// A hopper's level moved (docs/LEDGER.md, inventory): detail `unit` (the hopper's index),
    /// `coin_id`, `value_minor`, `level_before`, `level`, and per kind: a payout step counted by
    /// the hopper's own account (`request_id`, `step`, `paid`, `unpaid`), an operator's refill
    /// (`added`, `by`) or an operator's count of the hopper (`by`).
    case inventoryPaid = "inventory_paid"
    case inventoryRefilled = "inventory_refilled"
    case inventorySet = "inventory_set"

    /// A customer's credit (docs/LEDGER.md, credit): the columns `currency` and `value_minor`
    /// hold the amount moved; detail `request_id`, `account`, `by`, `balance_minor` (after), and
    /// `item` for a sale. An account opened for the source's currencies (detail `account`,
    /// `currencies`, `by`); a sale approved; a sale that failed after approval put back; credit
    /// paid back as change (beside its `payout_requested`); credit left standing taken to the
    /// cash box.
    case creditOpened = "credit_opened"
    case creditSpent = "credit_spent"
    case creditRefunded = "credit_refunded"
    case creditReturned = "credit_returned"
    case creditExpired = "credit_expired"
}
