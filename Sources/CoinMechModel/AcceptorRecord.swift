/// What the ledger records of a coin acceptor (ccTalk) besides its credits: the buffer's error
/// and backlog events, events lost to an overrun, restarts, faults, who it is. Each is an event
/// of its own kind; `detail` holds the fields as strings (docs/LEDGER.md).
public enum AcceptorRecord: Sendable, Equatable {
    /// An error event of the buffer (result A = 0): audit, never credit. `rejected` is the
    /// specification's "coin rejected?" (`yes`, `no`, `possibly`).
    case error(epoch: UInt64, number: UInt64, code: UInt8, name: String, message: String, rejected: String)
    /// Result A beyond 16: not a position (a broken device, or a misread frame).
    case invalid(epoch: UInt64, number: UInt64, a: UInt8, b: UInt8)
    /// In the buffer when the daemon first met the device: audit, never credit.
    case backlog(epoch: UInt64, number: UInt64, a: UInt8, b: UInt8, coinID: String?)
    /// Events `first…last` of `epoch` fell out of the five-deep buffer before anyone read them:
    /// coins may have been taken without credit.
    case lost(epoch: UInt64, first: UInt64, last: UInt64)
    /// A coin the acceptor took that the chain did not credit (the coin cannot be returned):
    /// the cash box holds it.
    case uncredited(epoch: UInt64, number: UInt64, position: Int, coinID: String?, reason: String, message: String)
    /// The device started again: `epoch` is its new session.
    case restarted(epoch: UInt64, cause: String)
    /// Its self-check reports a fault: it inhibits itself until the fault clears.
    case fault(code: UInt8, name: String, message: String, extra: UInt8?)
    case faultCleared
    /// Who answered at the address, and the coin of each position.
    case identified(manufacturer: String, product: String, serialNumber: UInt32?, software: String, coins: String)
    /// A report lost on the line that the device does not repeat (an MDB POLL reply): the
    /// coins in it may have been kept without credit. `after`: the last coin number reported.
    case replyLost(after: UInt64)
    /// A changer's tubes as it counted them, when they moved other than by a coin going in (a
    /// payout, a manual dispense, a refill seen at a count): the inventory, on the ledger.
    case tubesCounted(counts: [Int], cause: String)

    public var kind: EventKind {
        switch self {
        case .error, .invalid: .cctalkError
        case .backlog: .cctalkBacklog
        case .lost: .cctalkLost
        case .uncredited: .coinUncredited
        case .restarted: .mechPowerUp
        case .fault: .acceptorFault
        case .faultCleared: .acceptorFaultCleared
        case .identified: .acceptorIdentified
        case .replyLost: .acceptorReplyLost
        case .tubesCounted: .tubesCounted
        }
    }

    /// The event's epoch and device seq columns.
    public var place: (epoch: UInt64?, number: UInt64?) {
        switch self {
        case .error(let epoch, let number, _, _, _, _), .invalid(let epoch, let number, _, _), .backlog(let epoch, let number, _, _, _),
             .uncredited(let epoch, let number, _, _, _, _):
            (epoch, number)
        case .lost(let epoch, _, _), .restarted(let epoch, _):
            (epoch, nil)
        case .fault, .faultCleared, .identified, .replyLost, .tubesCounted:
            (nil, nil)
        }
    }

    public var detail: [String: String] {
        switch self {
        case .error(_, _, let code, let name, let message, let rejected):
            return ["code": "\(code)", "name": name, "message": message, "rejected": rejected]
        case .invalid(_, _, let a, let b):
            return ["code": "invalid", "name": "Invalid result", "message": "result A \(a) names no coin position (B \(b))", "rejected": "possibly"]
        case .backlog(_, _, let a, let b, let coinID):
            var detail = ["a": "\(a)", "b": "\(b)"]
            if let coinID { detail["coin_id"] = coinID }
            return detail
        case .lost(let epoch, let first, let last):
            return ["epoch": "\(epoch)", "first": "\(first)", "last": "\(last)", "count": "\(last - first + 1)"]
        case .uncredited(_, _, let position, let coinID, let reason, let message):
            var detail = ["position": "\(position)", "reason": reason, "message": message]
            if let coinID { detail["coin_id"] = coinID }
            return detail
        case .restarted(let epoch, let cause):
            return ["epoch": "\(epoch)", "cause": cause]
        case .fault(let code, let name, let message, let extra):
            var detail = ["code": "\(code)", "name": name, "message": message]
            if let extra { detail["extra"] = "\(extra)" }
            return detail
        case .faultCleared:
            return [:]
        case .identified(let manufacturer, let product, let serialNumber, let software, let coins):
            var detail = ["manufacturer": manufacturer, "product": product, "software": software, "coins": coins]
            if let serialNumber { detail["serial_number"] = "\(serialNumber)" }
            return detail
        case .replyLost(let after):
            return ["after": "\(after)"]
        case .tubesCounted(let counts, let cause):
            return ["tubes": PayoutCoinsText.text(Dictionary(uniqueKeysWithValues: counts.enumerated().map { ($0.offset, $0.element) })), "cause": cause]
        }
    }
}
