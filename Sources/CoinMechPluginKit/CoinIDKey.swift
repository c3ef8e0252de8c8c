import CoinMechPluginABI

/// A coin acceptor's coin id ("EU200A") as two words: a dictionary key read straight from the
/// reading, so a validator matches ids without building a string (nothing allocated per call).
public struct CoinIDKey: Hashable, Sendable {
    public let low: UInt64
    public let high: UInt64

    /// The id as text; nil when it does not fit the reading's field (at most 15 bytes).
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count < Int(COINMECH_COIN_ID_SIZE), !bytes.contains(0) else { return nil }
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: bytes) }
        low = words.0
        high = words.1
    }

    @inlinable init(field: UnsafeRawBufferPointer) {
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: field.prefix(16))) }
        low = words.0
        high = words.1
    }
}

extension ReadingView {
    /// The coin id of a COIN_ID reading as a key (nil for other readings); allocates nothing.
    public var coinIDKey: CoinIDKey? {
        let end = MemoryLayout<coinmech_reading>.offset(of: \.coin_id)! + Int(COINMECH_COIN_ID_SIZE)
        guard Int(raw.pointee.size) >= end, raw.pointee.flags & UInt32(COINMECH_READING_HAS_COIN_ID) != 0 else { return nil }
        return withUnsafeBytes(of: raw.pointee.coin_id) { CoinIDKey(field: $0) }
    }
}
