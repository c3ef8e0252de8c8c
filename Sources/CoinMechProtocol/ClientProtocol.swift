import CoinMechModel
import Foundation

/// The socket API's constants and message shapes (docs/PROTOCOL.md).
public enum ClientProtocol {
    /// Bumped on any incompatible change. 2: credit on the mech's confirmation (`coin` events;
    /// accepted decisions are pending and sent to subscribers only on request).
    public static let version: Int64 = 2
    /// The longest request line the daemon reads, in bytes (newline excluded).
    public static let maximumRequestLength = 4096
    /// Events a subscriber may have waiting before it is disconnected with `overflow`.
    public static let maximumQueuedEvents = 1024

    /// Error codes of `{"ok": false, "error": {"code": …}}`.
    public enum ErrorCode: String, Sendable, CaseIterable {
        case badJSON = "bad_json"
        case badRequest = "bad_request"
        case unknownCommand = "unknown_command"
        case lineTooLong = "line_too_long"
        case forbidden
        case unavailable
        case failed
    }

    public static let readCommands = Set(OperatorCommand.Name.allCases.filter { !$0.isControl }.map(\.rawValue))
    public static let controlCommands = Set(OperatorCommand.Name.allCases.filter(\.isControl).map(\.rawValue))

    /// Sample coins `teach_start` may ask for (fewer than 10 cannot be committed), and its default.
    public static let teachCoins: ClosedRange<Int64> = 10...1000
    public static let teachDefaultCoins: Int64 = 20
    /// Amounts `payout_plan` plans, in minor units: change, not cash withdrawals.
    public static let payoutAmount: ClosedRange<Int64> = 1...100_000
    /// Coins an operator loads into a payout unit at once (`refill`), or counts in it (`float`).
    public static let inventoryCoins: ClosedRange<Int64> = 1...100_000
    public static let inventoryLevel: ClosedRange<Int64> = 0...100_000

    /// A payout's `request_id`: the asker's name for it, 1 to 64 characters of `A-Z a-z 0-9 .
    /// _ : -` (a UUID fits).
    public static func isRequestID(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2E || byte == 0x5F || byte == 0x3A || byte == 0x2D
        }
    }

    /// Request ids the daemon gives the moves of credit left standing (`source.standing_credit`).
    public static let reservedCreditPrefixes = ["standing-", "expiry-"]

    /// A sale's `item`: what the sale application calls it, 1 to 64 bytes of UTF-8 with no
    /// control, format, separator or private-use characters (it is shown on screens and logs).
    public static func isItem(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.unicodeScalars.allSatisfy { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned: false
            default: true
            }
        }
    }

    /// The daemon's first line on every connection: the protocol, who speaks it, and the last
    /// recorded event's `seq`.
    public static func hello(version: String, seq: Int64) -> JSON {
        ["type": "hello", "protocol": .int(Self.version), "daemon": "coinmechd", "version": .string(version), "seq": .int(seq)]
    }

    /// An event for a subscriber.
    public static func event(_ event: LedgerEvent) -> JSON {
        ["type": "event", "seq": .int(event.seq), "event": event.json]
    }

    /// The subscriber fell too far behind: subscribe again from `resumeFrom` to lose nothing.
    public static func overflow(resumeFrom: Int64) -> JSON {
        ["type": "overflow", "resume_from": .int(resumeFrom)]
    }

    /// A reply to request `id`.
    public static func reply(id: JSON?, result: JSON) -> JSON {
        ["type": "reply", "id": id ?? .null, "ok": true, "result": result]
    }

    /// An error reply to request `id`.
    public static func error(id: JSON?, _ code: ErrorCode, _ message: String) -> JSON {
        ["type": "reply", "id": id ?? .null, "ok": false, "error": ["code": .string(code.rawValue), "message": .string(message)]]
    }
}

/// A reusable JSON decoder (decoders are not `Sendable`; each use makes its own).
enum JSONDecoderBox {
    static var decoder: JSONDecoder { JSONDecoder() }
}
