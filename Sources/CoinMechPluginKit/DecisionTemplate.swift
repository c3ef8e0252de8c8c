import CoinMechPluginABI

#if canImport(Glibc)
import Glibc
#endif

/// A verdict prepared when the instance is created, so `validate` only copies bytes.
public struct DecisionTemplate: Sendable {
    @usableFromInline let template: coinmech_decision

    /// Accept as `code` of `currency` worth `valueMinor`.
    public static func accept(currency: String, code: String, valueMinor: Int64) -> DecisionTemplate {
        var decision = coinmech_decision()
        decision.size = UInt32(MemoryLayout<coinmech_decision>.size)  // the helpers write only inside it
        coinmech_decision_accept(&decision, currency, code, valueMinor)
        return DecisionTemplate(template: decision)
    }

    /// Reject with a machine-readable `reason` and a `message` for people.
    public static func reject(reason: String, message: String) -> DecisionTemplate {
        var decision = coinmech_decision()
        decision.size = UInt32(MemoryLayout<coinmech_decision>.size)  // the helpers write only inside it
        coinmech_decision_reject(&decision, reason, message)
        return DecisionTemplate(template: decision)
    }

    /// Writes the verdict, never past the size the host gave. Only the fields the verdict
    /// uses are copied (an accept is about 50 bytes).
    @inlinable @inline(__always)
    public func write(to decision: UnsafeMutablePointer<coinmech_decision>) {
        withUnsafePointer(to: self) { Self.write($0, to: decision) }
    }

    /// `write(to:)` for a template kept in a buffer: copies only the bytes the verdict uses,
    /// memory to memory (an accept's verdict, value, currency and code lie side by side).
    @inlinable @inline(__always)
    public static func write(_ template: UnsafePointer<DecisionTemplate>, to decision: UnsafeMutablePointer<coinmech_decision>) {
        guard Int(decision.pointee.size) >= MemoryLayout<coinmech_decision>.size else {
            return writePrefix(UnsafeRawPointer(template), to: decision)
        }
        // The template is this struct's only stored property, so they share an address.
        let source = UnsafeRawPointer(template)
        let target = UnsafeMutableRawPointer(decision)
        let verdict = MemoryLayout<coinmech_decision>.offset(of: \.verdict)!
        let reason = MemoryLayout<coinmech_decision>.offset(of: \.reason)!
        // memcpy, not copyMemory: the regions never overlap, and copyMemory's overlap-safe copy
        // was compiled into a copy of the whole template to the stack first.
        if source.load(fromByteOffset: verdict, as: UInt32.self) == COINMECH_VERDICT_ACCEPT.rawValue {
            memcpy(target + verdict, source + verdict, reason - verdict)
        } else {
            memcpy(target + verdict, source + verdict, MemoryLayout<UInt32>.size)
            let end = MemoryLayout<coinmech_decision>.offset(of: \.message)! + Int(COINMECH_MESSAGE_SIZE)
            memcpy(target + reason, source + reason, end - reason)
        }
    }

    /// For a host built with a smaller decision struct: copy what fits, keep its size field.
    @usableFromInline
    static func writePrefix(_ template: UnsafeRawPointer, to decision: UnsafeMutablePointer<coinmech_decision>) {
        let hostSize = Int(decision.pointee.size)
        let skip = MemoryLayout<UInt32>.size
        UnsafeMutableRawPointer(decision).advanced(by: skip)
            .copyMemory(from: template.advanced(by: skip), byteCount: max(0, min(hostSize, MemoryLayout<coinmech_decision>.size) - skip))
    }
}
