import CoinMechModel
import Foundation

/// The customer's credit judged three ways: the ledger's events replayed in order (not the
/// daemon's balance column), the sale application's own record of what it was told, and the
/// payouts that paid credit back (whose coins the caller's device audit holds against the
/// device's truth). What the crash suite's sale runs print.
///
/// - **approved beyond the credit**: a `credit_spent` larger than the balance the replay had
///   reached before it, or any event leaving a balance below 0;
/// - **spent twice**: a request id with more than one `credit_spent`, or a sale the application
///   was told was approved under an id the ledger holds with another amount or event;
/// - **lost**: a sale, refund or return the application was told of that the ledger lacks;
/// - **phantom**: a credit move on the ledger under an id the application never asked;
/// - **money conserved**: coins in = sales (less refunds) + change paid + owed + still being
///   paid + credit standing + expired, to the cent, and the account's column equals the replay.
public struct CreditAudit: Sendable, Equatable {
    /// What the sale application was told, as its journal holds it.
    public struct Answer: Sendable, Equatable {
        public enum Kind: String, Sendable { case spend, refund, cancel }

        public var requestID: String
        public var kind: Kind
        /// `approved`, `refused`, `refunded`, `returned`, `kept`.
        public var state: String
        public var amountMinor: Int64?
        /// The event that recorded it, as the reply named it.
        public var seq: Int64?

        public init(requestID: String, kind: Kind, state: String, amountMinor: Int64? = nil, seq: Int64? = nil) {
            self.requestID = requestID
            self.kind = kind
            self.state = state
            self.amountMinor = amountMinor
            self.seq = seq
        }
    }

    public var coinsInMinor: Int64 = 0
    public var sales = 0
    public var salesMinor: Int64 = 0
    public var refunds = 0
    public var refundedMinor: Int64 = 0
    public var returns = 0
    public var returnedMinor: Int64 = 0
    public var changePaidMinor: Int64 = 0
    public var owedMinor: Int64 = 0
    /// Returns not settled yet: their amount is neither paid nor owed.
    public var openReturnsMinor: Int64 = 0
    public var expiredMinor: Int64 = 0
    public var standingMinor: Int64 = 0
    public var approvedBeyondCredit = 0
    public var spentTwice = 0
    public var lost = 0
    public var phantom = 0
    /// Commands the application was told moved nothing (refused, kept, bad_request) whose move
    /// is on the ledger all the same: the customer charged, or paid, behind its back.
    public var refusedButMoved = 0
    /// Credit events whose `balance_minor` is not the replay's, and the account's column against it.
    public var balanceMismatches = 0
    public var problems: [String] = []

    /// Coins in = every out + what stands.
    public var moneyConserved: Bool {
        coinsInMinor == salesMinor - refundedMinor + changePaidMinor + owedMinor + openReturnsMinor + expiredMinor + standingMinor
            && balanceMismatches == 0
    }

    public var isClean: Bool { moneyConserved && approvedBeyondCredit == 0 && spentTwice == 0 && lost == 0 && phantom == 0 && refusedButMoved == 0 }

    /// `events`: the whole ledger in seq order; `payouts`: its payouts; `balanceMinor`: the
    /// account's column at the end; `answers`: the application's record (nil: not judged against it).
    public init(source: String, currency: String, events: [LedgerEvent], payouts: [PayoutRecord], balanceMinor: Int64?, answers: [Answer]?) {
        var balance: Int64?
        var sold: [String: [LedgerEvent]] = [:]
        var moved: [String: Set<String>] = [:]
        for event in events where event.source == source && event.currency == currency {
            let value = event.valueMinor ?? 0
            let detail = event.detailJSONObject
            let id = detail["request_id"] ?? ""
            switch event.kind {
            case EventKind.creditOpened.rawValue:
                if balance == nil { balance = 0 }
                continue
            case EventKind.coin.rawValue:
                // Coins before the account was opened raised nothing.
                guard let before = balance else { continue }
                balance = before + value
                coinsInMinor += value
                continue
            case EventKind.creditSpent.rawValue:
                sales += 1
                salesMinor += value
                sold[id, default: []].append(event)
                if value > (balance ?? 0) {
                    approvedBeyondCredit += 1
                    problems.append("sale \(id) (#\(event.seq)) of \(value) with a credit of \(balance ?? 0)")
                }
                balance = (balance ?? 0) - value
            case EventKind.creditRefunded.rawValue:
                refunds += 1
                refundedMinor += value
                balance = (balance ?? 0) + value
            case EventKind.creditReturned.rawValue:
                returns += 1
                returnedMinor += value
                balance = (balance ?? 0) - value
            case EventKind.creditExpired.rawValue:
                expiredMinor += value
                balance = (balance ?? 0) - value
            default:
                continue
            }
            moved[id, default: []].insert(event.kind)
            let now = balance ?? 0
            if now < 0 {
                approvedBeyondCredit += 1
                problems.append("\(event.kind) \(id) (#\(event.seq)) left the credit at \(now)")
            }
            if detail["balance_minor"].flatMap({ Int64($0) }) != now {
                balanceMismatches += 1
                problems.append("\(event.kind) \(id) (#\(event.seq)) says the balance is \(detail["balance_minor"] ?? "nothing"), the events make \(now)")
            }
        }
        standingMinor = balance ?? 0
        if let balanceMinor, balanceMinor != standingMinor {
            balanceMismatches += 1
            problems.append("the account's balance is \(balanceMinor), the events make \(standingMinor)")
        }
        for (id, sales) in sold where sales.count > 1 {
            spentTwice += sales.count - 1
            problems.append("request id \(id) sold \(sales.count) times: #\(sales.map { String($0.seq) }.joined(separator: ", #"))")
        }
        // What paid the credit back: each return's payout, settled or not.
        for payout in payouts where payout.order.creditAccount != nil && payout.order.currency == currency && payout.source == source {
            guard let settlement = payout.settlement else {
                openReturnsMinor += payout.order.amountMinor
                continue
            }
            changePaidMinor += settlement.paidMinor
            owedMinor += settlement.debtMinor
            if settlement.paidMinor + settlement.debtMinor != payout.order.amountMinor {
                problems.append("return \(payout.order.requestID): paid \(settlement.paidMinor) + owed \(settlement.debtMinor) is not its \(payout.order.amountMinor)")
            }
        }

        guard let answers else { return }
        var asked: Set<String> = []
        for answer in answers {
            asked.insert(answer.requestID)
            let onLedger = moved[answer.requestID] ?? []
            switch (answer.kind, answer.state) {
            case (.spend, "approved"):
                let sale = sold[answer.requestID]?.first
                if sale == nil {
                    lost += 1
                    problems.append("sale \(answer.requestID) was approved to the application and is not on the ledger")
                } else if sale?.valueMinor != answer.amountMinor || (answer.seq != nil && sale?.seq != answer.seq) {
                    spentTwice += 1
                    problems.append("sale \(answer.requestID): the application was told #\(answer.seq ?? 0) of \(answer.amountMinor ?? 0), the ledger has #\(sale?.seq ?? 0) of \(sale?.valueMinor ?? 0)")
                }
            case (.refund, "refunded"):
                if !onLedger.contains(EventKind.creditRefunded.rawValue) {
                    lost += 1
                    problems.append("refund \(answer.requestID) was told to the application and is not on the ledger")
                }
            case (.cancel, "returned"):
                if !onLedger.contains(EventKind.creditReturned.rawValue) {
                    lost += 1
                    problems.append("return \(answer.requestID) was told to the application and is not on the ledger")
                }
            case (_, "unanswered"):
                break
            case (let kind, let state):
                // Told it moved nothing: nothing of its kind may be on the ledger under its id.
                let move = switch kind {
                case .spend: EventKind.creditSpent
                case .refund: EventKind.creditRefunded
                case .cancel: EventKind.creditReturned
                }
                if onLedger.contains(move.rawValue) {
                    refusedButMoved += 1
                    problems.append("\(kind.rawValue) \(answer.requestID) was answered \(state), and the ledger has its \(move.rawValue)")
                }
            }
        }
        for id in moved.keys where !asked.contains(id) {
            phantom += 1
            problems.append("credit moves under \(id), which the application never asked: \(moved[id]!.sorted())")
        }
    }
}

extension LedgerEvent {
    /// The detail's strings (the ledger writes each value as a string).
    fileprivate var detailJSONObject: [String: String] {
        guard let detail, let object = try? JSONSerialization.jsonObject(with: Data(detail.utf8)) as? [String: Any] else { return [:] }
        return object.compactMapValues { $0 as? String }
    }
}
