/// A source's name ("serial", "front-mech") stored inline, NUL-terminated, so a `Reading`
/// is plain bytes: copying one retains nothing, and a plugin gets a C string without a copy
/// of a Swift string.
public struct SourceName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// Longest name in UTF-8 bytes; the configuration refuses longer ones.
    public static let capacity = 31

    /// The UTF-8 bytes, zero-padded: at least one zero byte always ends the name.
    @usableFromInline var storage: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    /// A name from `string`, cut after the last whole scalar that fits in `capacity` bytes.
    public init(_ string: String) {
        var utf8: [UInt8] = []
        if string.utf8.count <= Self.capacity {
            utf8 = Array(string.utf8)
        } else {
            for scalar in string.unicodeScalars {
                let encoded = Array(String(scalar).utf8)
                guard utf8.count + encoded.count <= Self.capacity else { break }
                utf8 += encoded
            }
        }
        withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: utf8) }
    }

    /// A name from a C string (a reading's `source`), cut at `capacity` bytes, without making a
    /// Swift string: for the deciding path.
    public init(cString: UnsafePointer<CChar>?) {
        guard let cString else { return }
        withUnsafeMutableBytes(of: &storage) { bytes in
            var index = 0
            while index < Self.capacity, cString[index] != 0 {
                bytes[index] = UInt8(bitPattern: cString[index])
                index += 1
            }
        }
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public var description: String {
        withUnsafeBytes(of: storage) { bytes in
            String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }

    /// Calls `body` with the name as a C string, valid during the call only.
    @inlinable @inline(__always)
    public func withCString<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        var copy = storage
        return try withUnsafeBytes(of: &copy) { try body($0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
    }

    public static func == (a: SourceName, b: SourceName) -> Bool {
        a.storage == b.storage
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.0)
        hasher.combine(storage.1)
        hasher.combine(storage.2)
        hasher.combine(storage.3)
    }
}
