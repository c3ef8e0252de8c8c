import CoinMechPluginABI

/// One coin's measurement as the mech delivered it.
///
/// Stored in the plugin ABI's own layout, so handing it to a validator copies nothing, and
/// plain bytes throughout (the source name is inline), so copying one retains nothing.
public struct Reading: Sendable, Hashable, CustomStringConvertible {
    /// The C layout; its `source` pointer is always nil here (set only for the length of a call).
    @usableFromInline nonisolated(unsafe) var raw: coinmech_reading
    /// Name of the source that produced it.
    public var sourceName: SourceName

    /// Name of the source that produced it (e.g. "serial"); at most `SourceName.capacity` bytes.
    public var source: String {
        get { sourceName.description }
        set { sourceName = SourceName(newValue) }
    }

    public init(
        deviceSeq: UInt64, timestampNanoseconds: UInt64 = 0, diameterMM: Double? = nil, weightG: Double? = nil,
        thicknessMM: Double? = nil, channel: UInt32? = nil, alloy: Alloy? = nil, source: String = "test"
    ) {
        raw = coinmech_reading()
        raw.size = UInt32(MemoryLayout<coinmech_reading>.size)
        sourceName = SourceName(source)
        self.deviceSeq = deviceSeq
        self.timestampNanoseconds = timestampNanoseconds
        self.diameterMM = diameterMM
        self.weightG = weightG
        self.thicknessMM = thicknessMM
        self.channel = channel
        self.alloy = alloy
    }

    /// The alloy axis as the ABI carries it (ABI 2.1): apparent conductivity at the mech's low
    /// and high frequency (% IACS), and its apparent permeability where it measures one.
    public struct Alloy: Sendable, Hashable {
        public var lowIACS: Double
        public var highIACS: Double
        public var permeability: Double?

        public init(lowIACS: Double, highIACS: Double, permeability: Double? = nil) {
            self.lowIACS = lowIACS
            self.highIACS = highIACS
            self.permeability = permeability
        }
    }

    /// A coin acceptor's own classification (`COINMECH_READING_COIN_ID`): coin position, the
    /// acceptor's id of it ("EU200A", at most 15 bytes) and the sorter path. No measurements.
    public init(deviceSeq: UInt64, timestampNanoseconds: UInt64 = 0, coinPosition: UInt32, coinID: String, sorterPath: UInt32 = 0,
                source: String = "test") {
        self.init(deviceSeq: deviceSeq, timestampNanoseconds: timestampNanoseconds, source: source)
        raw.kind = COINMECH_READING_COIN_ID.rawValue
        raw.flags |= UInt32(COINMECH_READING_HAS_COIN_ID)
        raw.coin_position = coinPosition
        raw.sorter_path = sorterPath
        withUnsafeMutableBytes(of: &raw.coin_id) { bytes in
            let utf8 = Array(coinID.utf8.prefix(bytes.count - 1))
            bytes.copyBytes(from: utf8)
        }
    }

    /// A reading from the C struct a plugin host received (its `source` pointer is ignored).
    public init(raw: coinmech_reading, source: SourceName) {
        self.raw = raw
        self.raw.source = nil
        self.raw.size = UInt32(MemoryLayout<coinmech_reading>.size)
        sourceName = source
    }

    /// Calls `body` with the reading as a plugin sees it (its source a C string), valid during the call.
    @inlinable
    public func withCReading<R>(_ body: (UnsafePointer<coinmech_reading>) throws -> R) rethrows -> R {
        try sourceName.withCString { source in
            var copy = raw
            copy.source = source
            return try body(&copy)
        }
    }

    /// The C layout, without its source pointer (for copying across a process boundary).
    public var cLayout: coinmech_reading { raw }

    /// Measured figures, or an acceptor's coin id.
    public var kind: coinmech_reading_kind { coinmech_reading_kind(rawValue: raw.kind) }

    /// The acceptor's coin id ("EU200A"), for coin-id readings.
    public var coinID: String? {
        guard has(COINMECH_READING_HAS_COIN_ID) else { return nil }
        return withUnsafeBytes(of: raw.coin_id) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }

    /// The mech's own sequence number (restarts when the mech powers up).
    public var deviceSeq: UInt64 {
        get { raw.device_seq }
        set { raw.device_seq = newValue }
    }

    /// CLOCK_MONOTONIC, in nanoseconds, when the reading arrived.
    public var timestampNanoseconds: UInt64 {
        get { raw.timestamp_ns }
        set { raw.timestamp_ns = newValue }
    }

    public var diameterMM: Double? {
        get { has(COINMECH_READING_HAS_DIAMETER) ? raw.diameter_mm : nil }
        set { set(COINMECH_READING_HAS_DIAMETER, newValue, \.diameter_mm) }
    }

    public var weightG: Double? {
        get { has(COINMECH_READING_HAS_WEIGHT) ? raw.weight_g : nil }
        set { set(COINMECH_READING_HAS_WEIGHT, newValue, \.weight_g) }
    }

    public var thicknessMM: Double? {
        get { has(COINMECH_READING_HAS_THICKNESS) ? raw.thickness_mm : nil }
        set { set(COINMECH_READING_HAS_THICKNESS, newValue, \.thickness_mm) }
    }

    /// Pulse count, for pulse mechs.
    public var channel: UInt32? {
        get { has(COINMECH_READING_HAS_CHANNEL) ? raw.channel : nil }
        set { set(COINMECH_READING_HAS_CHANNEL, newValue, \.channel) }
    }

    /// The alloy axis, when the mech measured it.
    public var alloy: Alloy? {
        get {
            guard has(COINMECH_READING_HAS_ALLOY) else { return nil }
            return Alloy(lowIACS: raw.conductivity_low_iacs, highIACS: raw.conductivity_high_iacs,
                         permeability: has(COINMECH_READING_HAS_PERMEABILITY) ? raw.permeability : nil)
        }
        set {
            set(COINMECH_READING_HAS_ALLOY, newValue?.lowIACS, \.conductivity_low_iacs)
            set(COINMECH_READING_HAS_ALLOY, newValue?.highIACS, \.conductivity_high_iacs)
            set(COINMECH_READING_HAS_PERMEABILITY, newValue?.permeability, \.permeability)
        }
    }

    /// The same reading as a host of ABI 2.0 builds it: its struct ends before the alloy axis
    /// (for testing that a plugin reads no further than the size it is given).
    public var asABI20: Reading {
        var older = self
        older.alloy = nil
        older.raw.size = UInt32(MemoryLayout<coinmech_reading>.offset(of: \.conductivity_low_iacs)!)
        return older
    }

    private func has(_ flag: Int) -> Bool { raw.flags & UInt32(flag) != 0 }

    private mutating func set<T: Numeric>(_ flag: Int, _ value: T?, _ field: WritableKeyPath<coinmech_reading, T>) {
        if let value {
            raw[keyPath: field] = value
            raw.flags |= UInt32(flag)
        } else {
            raw[keyPath: field] = 0
            raw.flags &= ~UInt32(flag)
        }
    }

    public static func == (a: Reading, b: Reading) -> Bool {
        a.sourceName == b.sourceName && a.deviceSeq == b.deviceSeq && a.timestampNanoseconds == b.timestampNanoseconds
            && a.diameterMM == b.diameterMM && a.weightG == b.weightG && a.thicknessMM == b.thicknessMM && a.channel == b.channel
            && a.raw.kind == b.raw.kind && a.coinID == b.coinID && a.raw.coin_position == b.raw.coin_position
            && a.raw.sorter_path == b.raw.sorter_path && a.alloy == b.alloy
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(sourceName)
        hasher.combine(deviceSeq)
        hasher.combine(timestampNanoseconds)
        hasher.combine(diameterMM)
        hasher.combine(weightG)
        hasher.combine(thicknessMM)
        hasher.combine(channel)
        hasher.combine(alloy)
    }

    public var description: String {
        var parts = ["\(source)#\(deviceSeq)"]
        if let diameterMM { parts.append("d=\(diameterMM)mm") }
        if let weightG { parts.append("w=\(weightG)g") }
        if let thicknessMM { parts.append("t=\(thicknessMM)mm") }
        if let channel { parts.append("ch=\(channel)") }
        if let alloy {
            parts.append("σ=\(alloy.lowIACS)/\(alloy.highIACS)%IACS")
            if let permeability = alloy.permeability { parts.append("μ=\(permeability)") }
        }
        if let coinID { parts.append("coin=\(coinID)@\(raw.coin_position)") }
        return parts.joined(separator: " ")
    }
}
