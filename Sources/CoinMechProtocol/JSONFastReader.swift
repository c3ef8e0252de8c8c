/// The common shape of JSON read in one pass over its UTF-8, for `JSON.parse`.
///
/// Why: `JSON`'s `Decodable` tree is read by trying each type in turn on a single-value
/// container, and every miss throws a `DecodingError` with its context and message: a fleet
/// event of twenty members cost some fifty of them, most of the fleet's time per message. This
/// reader takes what the contract's messages are made of (objects, arrays, plain strings and
/// their one-character escapes, numbers, literals) and returns nil, "not decided here", for
/// anything else: `\u` escapes, a member named twice, integers past 18 digits, fractions or
/// exponents at 2^53 and above (where a double stops holding every whole number), deeper than
/// `maxDepth`, or text that is not JSON. `JSON.parse` then asks the decoder, which stays the
/// one authority on those. So the value returned here is always the decoder's: the `request`
/// fuzz target compares the two on every input it reads.
public struct JSONFastReader {
    /// Deeper than this is left to the decoder.
    public static let maxDepth = 64

    private let bytes: UnsafeBufferPointer<UInt8>
    private var at = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The value, or nil: not read here (the decoder decides).
    public static func read(_ text: String) -> JSON? {
        var text = text
        return text.withUTF8 { buffer in
            var reader = JSONFastReader(buffer)
            guard let value = reader.value() else { return nil }
            reader.skipSpace()
            // Written out: in `cond ? value : nil` the literal would be read as `JSON.null`.
            guard reader.at == buffer.count else { return nil }
            return value
        }
    }

    private var peek: UInt8? { at < bytes.count ? bytes[at] : nil }

    private mutating func skipSpace() {
        while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
    }

    private mutating func value() -> JSON? {
        skipSpace()
        guard let byte = peek else { return nil }
        switch byte {
        case UInt8(ascii: "{"): return object()
        case UInt8(ascii: "["): return array()
        case UInt8(ascii: "\""): return string().map(JSON.string)
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
        default: return nil
        }
    }

    private mutating func literal(_ word: String, _ value: JSON) -> JSON? {
        for expected in word.utf8 {
            guard peek == expected else { return nil }
            at += 1
        }
        return value
    }

    private mutating func object() -> JSON? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxDepth else { return nil }
        at += 1
        var members: [String: JSON] = [:]
        skipSpace()
        if peek == UInt8(ascii: "}") {
            at += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard peek == UInt8(ascii: "\""), let key = string() else { return nil }
            skipSpace()
            guard peek == UInt8(ascii: ":") else { return nil }
            at += 1
            guard let value = value() else { return nil }
            // The message's own object, once it has a member: room for a contract message's
            // members at once, without rehashing as they come. Only there: an inner object
            // grows as its members come, so a text of many small objects costs no more than
            // the decoder's would.
            if depth == 1 && members.isEmpty { members.reserveCapacity(24) }
            // A member named twice: which one the decoder keeps is its business.
            guard members.updateValue(value, forKey: key) == nil else { return nil }
            skipSpace()
            switch peek {
            case UInt8(ascii: ",")?: at += 1
            case UInt8(ascii: "}")?:
                at += 1
                return .object(members)
            default: return nil
            }
        }
    }

    private mutating func array() -> JSON? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxDepth else { return nil }
        at += 1
        var elements: [JSON] = []
        skipSpace()
        if peek == UInt8(ascii: "]") {
            at += 1
            return .array(elements)
        }
        while true {
            guard let value = value() else { return nil }
            elements.append(value)
            skipSpace()
            switch peek {
            case UInt8(ascii: ",")?: at += 1
            case UInt8(ascii: "]")?:
                at += 1
                return .array(elements)
            default: return nil
            }
        }
    }

    /// A string at `"`: its text, with the one-character escapes undone.
    private mutating func string() -> String? {
        at += 1
        let start = at
        // Most strings have no escape: taken as they stand.
        while at < bytes.count, bytes[at] != UInt8(ascii: "\""), bytes[at] != UInt8(ascii: "\\") {
            guard bytes[at] >= 0x20 else { return nil }
            at += 1
        }
        guard at < bytes.count else { return nil }
        if bytes[at] == UInt8(ascii: "\"") {
            at += 1
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(at - 1)]), as: UTF8.self)
        }
        var text = Array(bytes[start..<at])
        while at < bytes.count {
            let byte = bytes[at]
            at += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: text, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard at < bytes.count else { return nil }
                let escaped = bytes[at]
                at += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escaped)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0C)
                case UInt8(ascii: "n"): text.append(0x0A)
                case UInt8(ascii: "r"): text.append(0x0D)
                case UInt8(ascii: "t"): text.append(0x09)
                // `\u` (and surrogate pairs) is the decoder's.
                default: return nil
                }
            case 0..<0x20:
                return nil
            default:
                text.append(byte)
            }
        }
        return nil
    }

    /// RFC 8259's number. A whole number is an `int`, as `JSON`'s decoder makes it, whether
    /// written with a fraction or an exponent or not.
    private mutating func number() -> JSON? {
        let start = at
        if peek == UInt8(ascii: "-") { at += 1 }
        guard let first = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return nil }
        if first == UInt8(ascii: "0") {
            at += 1
        } else {
            while let digit = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) { at += 1 }
        }
        let integerEnd = at
        var plain = true
        if peek == UInt8(ascii: ".") {
            plain = false
            at += 1
            guard digits() else { return nil }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            plain = false
            at += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { at += 1 }
            guard digits() else { return nil }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
        if plain {
            // Up to 18 digits always fit an Int64; longer ones are the decoder's.
            let digitCount = integerEnd - start - (bytes[start] == UInt8(ascii: "-") ? 1 : 0)
            guard digitCount <= 18, let value = Int64(text) else { return nil }
            return .int(value)
        }
        guard let value = Double(text), value.isFinite, abs(value) < 0x1p53 else { return nil }
        return value == value.rounded() ? .int(Int64(value)) : .double(value)
    }

    private mutating func digits() -> Bool {
        let start = at
        while let digit = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) { at += 1 }
        return at > start
    }
}
