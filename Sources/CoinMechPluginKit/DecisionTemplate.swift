import CoinMechPluginABI

/// A verdict prepared when the instance is created, so `validate` only copies bytes.
public struct DecisionTemplate: Sendable {
    @usableFromInline let template: coinmech_decision

    /// Accept as `code` of `currency` worth `valueMinor`.
    public static func accept(currency: String, code: String, valueMinor: Int64) -> DecisionTemplate {
        var decision = coinmech_decision()
        decision.verdict = COINMECH_VERDICT_ACCEPT.rawValue
        decision.value_minor = valueMinor
        write(currency, into: &decision.currency)
        write(code, into: &decision.code)
        return DecisionTemplate(template: decision)
    }

    /// Reject with a machine-readable `reason` and a `message` for people.
    public static func reject(reason: String, message: String) -> DecisionTemplate {
        var decision = coinmech_decision()
        decision.verdict = COINMECH_VERDICT_REJECT.rawValue
        write(reason, into: &decision.reason)
        write(message, into: &decision.message)
        return DecisionTemplate(template: decision)
    }

    /// Writes the verdict, never past the size the host gave. Only the fields the verdict
    /// uses are copied (an accept is about 50 bytes).
    @inlinable @inline(__always)
    public func write(to decision: UnsafeMutablePointer<coinmech_decision>) {
        withUnsafePointer(to: self) { Self.write($0, to: decision) }
    }

    /// `write(to:)` for a template kept in a buffer: reads only the fields the verdict uses,
    /// where a copy of the template would move all of its 216 bytes.
    @inlinable @inline(__always)
    public static func write(_ template: UnsafePointer<DecisionTemplate>, to decision: UnsafeMutablePointer<coinmech_decision>) {
        if Int(decision.pointee.size) >= MemoryLayout<coinmech_decision>.size {
            // The template is this struct's only stored property, so they share an address.
            let source = UnsafeRawPointer(template).assumingMemoryBound(to: coinmech_decision.self)
            decision.pointee.verdict = source.pointee.verdict
            if source.pointee.verdict == COINMECH_VERDICT_ACCEPT.rawValue {
                decision.pointee.value_minor = source.pointee.value_minor
                decision.pointee.currency = source.pointee.currency
                decision.pointee.code = source.pointee.code
            } else {
                decision.pointee.reason = source.pointee.reason
                decision.pointee.message = source.pointee.message
            }
        } else {
            template.pointee.writePrefix(to: decision)
        }
    }

    /// For a host built with a smaller decision struct: copy what fits, keep its size field.
    @usableFromInline
    func writePrefix(to decision: UnsafeMutablePointer<coinmech_decision>) {
        let hostSize = Int(decision.pointee.size)
        withUnsafeBytes(of: template) { bytes in
            let skip = MemoryLayout<UInt32>.size
            UnsafeMutableRawPointer(decision).advanced(by: skip)
                .copyMemory(from: bytes.baseAddress!.advanced(by: skip), byteCount: max(0, hostSize - skip))
        }
    }

    private static func write<T>(_ string: String, into field: inout T) {
        withUnsafeMutableBytes(of: &field) { bytes in
            let utf8 = Array(string.utf8.prefix(bytes.count - 1))
            bytes.copyBytes(from: utf8)
            bytes[utf8.count] = 0
        }
    }
}
