import CoinMechPluginABI

/// What a validator plugin written in Swift implements. `PluginExport` turns it into the C ABI.
///
/// The host never calls `validate` on one instance from two threads at once, so a
/// validator may keep state without locks.
public protocol SwiftValidator: AnyObject {
    /// Builds an instance from the link's JSON configuration; throws a message for the operator.
    init(configJSON: String) throws(PluginConfigError)
    /// Decides one reading by writing into `decision` (verdict PASS on entry).
    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>)
    /// A JSON object describing the instance; a "warnings" array is logged at load time.
    func describe() -> String
    /// How the instance judges `reading`, for a person: a JSON object whose "lines" array is
    /// shown as it is (see `COINMECH_PLUGIN_EXPLAIN_SYMBOL`); nil when it has nothing to say.
    /// Exported through `PluginExport.explain`. Never called on the deciding path.
    func explain(_ reading: ReadingView) -> String?
}

extension SwiftValidator {
    public func describe() -> String { "{}" }
    public func explain(_ reading: ReadingView) -> String? { nil }
}

/// Read access to the host's reading, without copying it.
public struct ReadingView {
    public let raw: UnsafePointer<coinmech_reading>

    @inlinable public init(_ raw: UnsafePointer<coinmech_reading>) { self.raw = raw }

    @inlinable func has(_ flag: UInt32) -> Bool { raw.pointee.flags & flag != 0 }

    @inlinable public var deviceSeq: UInt64 { raw.pointee.device_seq }
    @inlinable public var timestampNanoseconds: UInt64 { raw.pointee.timestamp_ns }
    @inlinable public var diameterMM: Double? { has(UInt32(COINMECH_READING_HAS_DIAMETER)) ? raw.pointee.diameter_mm : nil }
    @inlinable public var weightG: Double? { has(UInt32(COINMECH_READING_HAS_WEIGHT)) ? raw.pointee.weight_g : nil }
    @inlinable public var thicknessMM: Double? {
        // A host built against a smaller reading struct has no thickness field.
        guard raw.pointee.size >= MemoryLayout<coinmech_reading>.offset(of: \.channel)! else { return nil }
        return has(UInt32(COINMECH_READING_HAS_THICKNESS)) ? raw.pointee.thickness_mm : nil
    }
    @inlinable public var channel: UInt32? { has(UInt32(COINMECH_READING_HAS_CHANNEL)) ? raw.pointee.channel : nil }
}
