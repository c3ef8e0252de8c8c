import CoinMechPluginABI

/// What a validator plugin written in Swift implements. `PluginExport` turns it into the C ABI.
///
/// The host never calls `validate` on one instance from two threads at once, so a validator may
/// keep state without locks (the threading contract is in `coinmech_plugin.h`).
public protocol SwiftValidator: AnyObject {
    /// Builds an instance from the link's JSON configuration; throws a message for the operator.
    /// `host` (the link's name, a log, the clock) may be kept: it is valid until the instance is freed.
    init(configJSON: String, host: PluginHost) throws(PluginConfigError)
    /// Decides one reading by writing into `decision` (verdict PASS on entry).
    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>)
    /// A JSON object describing the instance; a "warnings" array is logged at load time.
    func describe() -> String
    /// How the instance judges `reading`, for a person: a JSON object whose "lines" array is
    /// shown as it is; nil when it has nothing to say. Never called on the deciding path.
    func explain(_ reading: ReadingView) -> String?
}

extension SwiftValidator {
    public func describe() -> String { "{}" }
    public func explain(_ reading: ReadingView) -> String? { nil }
}

/// Read access to the host's reading, without copying it. Fields past the host's struct size
/// read as absent.
public struct ReadingView {
    public let raw: UnsafePointer<coinmech_reading>

    @inlinable public init(_ raw: UnsafePointer<coinmech_reading>) { self.raw = raw }

    @inlinable func has(_ flag: UInt32) -> Bool { raw.pointee.flags & flag != 0 }

    /// COINMECH_READING_MEASURED or COINMECH_READING_COIN_ID.
    @inlinable public var kind: coinmech_reading_kind { coinmech_reading_kind(rawValue: raw.pointee.kind) }
    @inlinable public var deviceSeq: UInt64 { raw.pointee.device_seq }
    @inlinable public var timestampNanoseconds: UInt64 { raw.pointee.timestamp_ns }
    @inlinable public var diameterMM: Double? { has(UInt32(COINMECH_READING_HAS_DIAMETER)) ? raw.pointee.diameter_mm : nil }
    @inlinable public var weightG: Double? { has(UInt32(COINMECH_READING_HAS_WEIGHT)) ? raw.pointee.weight_g : nil }
    @inlinable public var thicknessMM: Double? { has(UInt32(COINMECH_READING_HAS_THICKNESS)) ? raw.pointee.thickness_mm : nil }
    @inlinable public var channel: UInt32? { has(UInt32(COINMECH_READING_HAS_CHANNEL)) ? raw.pointee.channel : nil }

    /// The alloy axis (ABI 2.1): apparent conductivity at the mech's low and high frequency
    /// (% IACS) and its apparent permeability where it measures one; nil when the reading has
    /// none, or the host's struct ends before it (a host of ABI 2.0).
    @inlinable public var alloy: (lowIACS: Double, highIACS: Double, permeability: Double?)? {
        guard Int(raw.pointee.size) >= ReadingView.alloyEnd, has(UInt32(COINMECH_READING_HAS_ALLOY)) else { return nil }
        return (raw.pointee.conductivity_low_iacs, raw.pointee.conductivity_high_iacs,
                has(UInt32(COINMECH_READING_HAS_PERMEABILITY)) ? raw.pointee.permeability : nil)
    }

    /// Where the alloy fields end: a reading at least this large holds them.
    public static let alloyEnd = MemoryLayout<coinmech_reading>.offset(of: \.permeability)! + MemoryLayout<Double>.size

    /// A coin acceptor's own classification (COIN_ID readings): position, id string, sorter path.
    public var coinID: (position: UInt32, id: String, sorterPath: UInt32)? {
        let end = MemoryLayout<coinmech_reading>.offset(of: \.coin_id)! + Int(COINMECH_COIN_ID_SIZE)
        guard Int(raw.pointee.size) >= end, has(UInt32(COINMECH_READING_HAS_COIN_ID)) else { return nil }
        let id = withUnsafeBytes(of: raw.pointee.coin_id) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        return (raw.pointee.coin_position, id, raw.pointee.sorter_path)
    }
}
