import CoinFacts
import CoinMechPluginABI

extension coinmech_decision {
    /// A zeroed decision (verdict PASS) that tells the plugin its size.
    @inlinable
    static var blank: coinmech_decision {
        var decision = coinmech_decision()
        decision.size = UInt32(MemoryLayout<coinmech_decision>.size)
        return decision
    }

    /// A blank decision rejecting with `reason` and `message`, written (and cut to the fields'
    /// sizes) by the ABI's own `coinmech_decision_reject`.
    static func rejecting(reason: String, message: String) -> coinmech_decision {
        var decision = coinmech_decision.blank
        coinmech_decision_reject(&decision, reason, message)
        return decision
    }

    /// An ACCEPT with a currency, a code and a positive value; checked without copying strings.
    @inline(__always)
    var isWellFormedAccept: Bool {
        verdict == COINMECH_VERDICT_ACCEPT.rawValue && currency.0 != 0 && code.0 != 0 && value_minor > 0
    }

    /// Reads the verdict a link wrote, copying its strings; malformed answers become `plugin_error`.
    func linkVerdict() -> LinkVerdict {
        switch verdict {
        case COINMECH_VERDICT_PASS.rawValue:
            return .pass
        case COINMECH_VERDICT_ACCEPT.rawValue:
            guard isWellFormedAccept else {
                return .decided(.reject(Rejection(
                    reason: "plugin_error",
                    message: "plugin accepted without currency, code or positive value")))
            }
            return .decided(.accept(Denomination(currency: Self.string(currency), code: Self.string(code), valueMinor: value_minor)))
        case COINMECH_VERDICT_REJECT.rawValue:
            let reason = Self.string(reason)
            return .decided(.reject(Rejection(reason: reason.isEmpty ? "rejected" : reason, message: Self.string(message))))
        default:
            return .decided(.reject(Rejection(reason: "plugin_error", message: "plugin returned unknown verdict \(verdict)")))
        }
    }

    /// Copies a fixed-size C field, stopping at the first NUL or at the end of the field.
    static func string<T>(_ field: T) -> String {
        withUnsafeBytes(of: field) { bytes in
            let end = bytes.firstIndex(of: 0) ?? bytes.count
            return String(decoding: bytes[..<end], as: UTF8.self)
        }
    }
}
