import Foundation

/// A JSON value: what travels on the socket, one object per line.
public enum JSON: Sendable, Hashable, Codable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            // A whole number written with a fraction or an exponent (`2.0`, `9.2e17`) is an int,
            // as the integer it equals: so every value reads back as itself once written
            // (found by fuzzing: a `.double` of 9.2e17 came back as an `.int`).
            self = value == value.rounded() && abs(value) < 0x1p63 ? .int(Int64(value)) : .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSON].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> JSON? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var string: String? { if case .string(let value) = self { value } else { nil } }
    public var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    public var int: Int64? {
        switch self {
        case .int(let value): value
        case .double(let value) where value == value.rounded() && abs(value) < 9e15: Int64(value)
        default: nil
        }
    }
    public var double: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }
    public var array: [JSON]? { if case .array(let value) = self { value } else { nil } }
    public var object: [String: JSON]? { if case .object(let value) = self { value } else { nil } }

    /// Compact text with sorted keys, no newline: one protocol line.
    public var description: String {
        var text = ""
        write(to: &text)
        return text
    }

    func write(to text: inout String) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .int(let value): text += String(value)
        case .double(let value): text += value.isFinite ? "\(value)" : "null"
        case .string(let value): Self.quote(value, into: &text)
        case .array(let values):
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                value.write(to: &text)
            }
            text += "]"
        case .object(let object):
            text += "{"
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { text += "," }
                Self.quote(key, into: &text)
                text += ":"
                object[key]!.write(to: &text)
            }
            text += "}"
        }
    }

    static func quote(_ string: String, into text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case let c where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByFloatLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(dictionaryLiteral elements: (String, JSON)...) { self = .object(Dictionary(elements, uniquingKeysWith: { $1 })) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
}

extension JSON {
    /// Parses one line of JSON text: in one pass where it has the common shape
    /// (`JSONFastReader`), by the decoder otherwise.
    public static func parse(_ text: String) -> JSON? {
        JSONFastReader.read(text) ?? decoded(text)
    }

    /// Parses one line of JSON text by the decoder alone: the authority `JSONFastReader` is
    /// held to.
    public static func decoded(_ text: String) -> JSON? {
        try? JSONDecoderBox.decoder.decode(JSON.self, from: Data(text.utf8))
    }
}
