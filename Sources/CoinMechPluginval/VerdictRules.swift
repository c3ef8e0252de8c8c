import CoinMechChain
import CoinMechPluginABI

/// What makes a verdict well-formed, as the daemon reads it: a known verdict; an accept with a
/// currency, code and value the host would credit; a reject with a printable reason and a
/// message, each NUL-terminated inside its field.
enum VerdictRules {
    /// Why `decision` is not well-formed, or nil.
    static func problem(_ decision: coinmech_decision) -> String? {
        switch decision.verdict {
        case COINMECH_VERDICT_PASS.rawValue:
            return nil
        case COINMECH_VERDICT_ACCEPT.rawValue:
            guard decision.value_minor > 0 else { return "accepted with value \(decision.value_minor)" }
            guard AcceptPolicy.standard.allows(decision) else {
                let reason = AcceptPolicy.standard.isLie(decision) ? "plugin_lie" : "plugin_error"
                return "accepted what the host will not credit (it returns the coin as \(reason)): \(AcceptPolicy.standard.problem(decision))"
            }
            return nil
        case COINMECH_VERDICT_REJECT.rawValue:
            guard let reason = text(decision.reason) else { return "rejected with a reason not NUL-terminated within \(COINMECH_REASON_SIZE) bytes" }
            guard !reason.isEmpty else { return "rejected without a reason" }
            guard reason.utf8.allSatisfy({ $0 >= 0x21 && $0 < 0x7F }) else { return "rejected with a reason that is not printable ASCII without spaces: '\(reason)'" }
            guard let message = text(decision.message) else { return "rejected with a message not NUL-terminated within \(COINMECH_MESSAGE_SIZE) bytes" }
            guard message.utf8.allSatisfy({ $0 >= 0x20 }) else { return "rejected with a message holding control characters" }
            return nil
        default:
            return "answered verdict \(decision.verdict), which is none of PASS, ACCEPT and REJECT"
        }
    }

    /// The verdict in a line: "pass", "accept USD quarter 25", "reject too_light".
    static func summary(_ decision: coinmech_decision) -> String {
        switch decision.verdict {
        case COINMECH_VERDICT_PASS.rawValue: "pass"
        case COINMECH_VERDICT_ACCEPT.rawValue: "accept \(text(decision.currency) ?? "?") \(text(decision.code) ?? "?") \(decision.value_minor)"
        case COINMECH_VERDICT_REJECT.rawValue: "reject \(text(decision.reason) ?? "?")"
        default: "verdict \(decision.verdict)"
        }
    }

    /// The bytes of a decision that carry its answer (for "same reading, same answer").
    static func fingerprint(_ decision: coinmech_decision) -> [UInt8] {
        var copy = decision
        copy.size = 0
        switch decision.verdict {
        case COINMECH_VERDICT_PASS.rawValue: return [0]
        case COINMECH_VERDICT_ACCEPT.rawValue: return [1] + withUnsafeBytes(of: copy.value_minor) { Array($0) } + Array((text(copy.currency) ?? "").utf8) + [0] + Array((text(copy.code) ?? "").utf8)
        default: return withUnsafeBytes(of: copy.verdict) { Array($0) } + Array((text(copy.reason) ?? "").utf8) + [0] + Array((text(copy.message) ?? "").utf8)
        }
    }

    /// A fixed C field up to its NUL, or nil when there is none inside it.
    static func text<T>(_ field: T) -> String? {
        withUnsafeBytes(of: field) { bytes in
            guard let end = bytes.firstIndex(of: 0) else { return nil }
            return String(decoding: bytes[..<end], as: UTF8.self)
        }
    }
}
