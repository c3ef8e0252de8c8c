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

    public static let readCommands: Set<String> = ["status", "totals", "chain", "events", "subscribe", "teach_status", "explain"]
    public static let controlCommands: Set<String> = ["inhibit", "collect", "reload", "teach_start", "teach_commit", "teach_abort"]

    /// Sample coins `teach_start` may ask for (fewer than 10 cannot be committed), and its default.
    public static let teachCoins: ClosedRange<Int64> = 10...1000
    public static let teachDefaultCoins: Int64 = 20

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
