import Foundation
import Yams

/// A table (mapping) of a YAML settings file with typed, checked access: every error names the
/// file, the line and the full key path, and keys nobody asked for are reported as unknown.
///
/// Not `Sendable` (Yams nodes are not): read it into your own `Sendable` values.
public struct SettingsTable {
    public let file: String
    /// Key path of this table ("" at the top level).
    public let path: String
    let node: Node
    let entries: [(key: String, value: Node)]
    /// The file's last line (`lastLine(of:)`): no error names a line past it.
    let lastLine: Int

    /// Parses `text` (the contents of `file`); the top level must be a table.
    public static func parse(_ text: String, file: String) throws(SettingsError) -> SettingsTable {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw SettingsError(file: file, line: Self.line(of: error).map { min($0, Self.lastLine(of: text)) }, key: "",
                                message: "not valid YAML: \(Self.problem(of: error))")
        } catch {
            throw SettingsError(file: file, line: nil, key: "", message: "not valid YAML: \(error)")
        }
        let lastLine = Self.lastLine(of: text)
        guard let root else { return try SettingsTable(file: file, path: "", node: Node([(Node, Node)]()), lastLine: lastLine) }
        return try SettingsTable(file: file, path: "", node: root, lastLine: lastLine)
    }

    /// Reads and parses the file at `path`.
    public static func load(path: String) throws(SettingsError) -> SettingsTable {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SettingsError(file: path, line: nil, key: "", message: "cannot read file: \(Self.readProblem(path))")
        }
        return try parse(text, file: path)
    }

    init(file: String, path: String, node: Node, lastLine: Int) throws(SettingsError) {
        func clamped(_ line: Int?) -> Int? { line.map { min($0, lastLine) } }
        guard case .mapping(let mapping) = node else {
            throw SettingsError(file: file, line: clamped(node.mark?.line), key: path, message: "must be a table")
        }
        var entries: [(String, Node)] = []
        for (key, value) in mapping {
            guard let name = key.string else {
                throw SettingsError(file: file, line: clamped(key.mark?.line), key: path, message: "keys must be strings")
            }
            if entries.contains(where: { $0.0 == name }) {
                throw SettingsError(file: file, line: clamped(key.mark?.line), key: Self.join(path, name), message: "appears twice")
            }
            entries.append((name, value))
        }
        self.file = file
        self.path = path
        self.node = node
        self.entries = entries
        self.lastLine = lastLine
    }

    /// Keys present in this table, in file order.
    public var keys: [String] { entries.map(\.key) }

    public func contains(_ key: String) -> Bool { entries.contains { $0.key == key } }

    /// Fails on the first key not in `known`, listing the known ones.
    public func rejectUnknownKeys(_ known: Set<String>) throws(SettingsError) {
        for (key, value) in entries where !known.contains(key) {
            throw SettingsError(file: file, line: clamped(value.mark?.line ?? node.mark?.line), key: Self.join(path, key),
                                message: "unknown key (known here: \(known.sorted().joined(separator: ", ")))")
        }
    }

    /// An error about `key` of this table, at its line.
    public func error(_ key: String, _ message: String) -> SettingsError {
        SettingsError(file: file, line: line(key), key: Self.join(path, key), message: message)
    }

    /// An error about this table as a whole.
    public func error(_ message: String) -> SettingsError {
        SettingsError(file: file, line: clamped(node.mark?.line), key: path, message: message)
    }

    func value(_ key: String) -> Node? { entries.first { $0.key == key }?.value }

    // MARK: Typed access

    public func string(_ key: String) throws(SettingsError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .scalar(let scalar) = value, scalar.style != .plain || value.null == nil else {
            throw error(key, "must be a string")
        }
        return scalar.string
    }

    public func double(_ key: String) throws(SettingsError) -> Double? {
        guard let value = value(key) else { return nil }
        guard case .scalar = value, let number = value.float ?? value.wholeNumber.map(Double.init), number.isFinite else {
            throw error(key, "must be a number, got \(Self.describe(value))")
        }
        return number
    }

    public func int(_ key: String) throws(SettingsError) -> Int? {
        guard let value = value(key) else { return nil }
        guard case .scalar = value, let number = value.wholeNumber else {
            throw error(key, "must be a whole number, got \(Self.describe(value))")
        }
        return number
    }

    /// A number within `range`; out of it, an error that names the range.
    public func double(_ key: String, in range: ClosedRange<Double>) throws(SettingsError) -> Double? {
        guard let number = try double(key) else { return nil }
        guard range.contains(number) else {
            throw error(key, "must be \(String(format: "%g", range.lowerBound)) to \(String(format: "%g", range.upperBound)), got \(String(format: "%g", number))")
        }
        return number
    }

    /// A whole number within `range`; out of it, an error that names the range.
    public func int(_ key: String, in range: ClosedRange<Int>) throws(SettingsError) -> Int? {
        guard let number = try int(key) else { return nil }
        guard range.contains(number) else { throw error(key, "must be \(range.lowerBound) to \(range.upperBound), got \(number)") }
        return number
    }

    public func bool(_ key: String) throws(SettingsError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .scalar = value, let flag = value.bool else {
            throw error(key, "must be true or false, got \(Self.describe(value))")
        }
        return flag
    }

    public func table(_ key: String) throws(SettingsError) -> SettingsTable? {
        guard let value = value(key) else { return nil }
        return try SettingsTable(file: file, path: Self.join(path, key), node: value, lastLine: lastLine)
    }

    /// The tables of a list of tables (`[[x]]`-style), each with its index in its path.
    public func tables(_ key: String) throws(SettingsError) -> [SettingsTable]? {
        guard let value = value(key) else { return nil }
        guard case .sequence(let sequence) = value else { throw error(key, "must be a list of tables") }
        var tables: [SettingsTable] = []
        for (index, item) in sequence.enumerated() {
            tables.append(try SettingsTable(file: file, path: "\(Self.join(path, key))[\(index)]", node: item, lastLine: lastLine))
        }
        return tables
    }

    public func strings(_ key: String) throws(SettingsError) -> [String]? {
        guard let value = value(key) else { return nil }
        guard case .sequence(let sequence) = value else { throw error(key, "must be a list of strings") }
        var strings: [String] = []
        for item in sequence {
            guard case .scalar(let scalar) = item else { throw error(key, "must be a list of strings") }
            strings.append(scalar.string)
        }
        return strings
    }

    /// Numbers of a list, e.g. `at_coins: [10, 20]`.
    public func doubles(_ key: String) throws(SettingsError) -> [Double]? {
        guard let value = value(key) else { return nil }
        guard case .sequence(let sequence) = value else { throw error(key, "must be a list of numbers") }
        var numbers: [Double] = []
        for item in sequence {
            guard let number = item.float ?? item.wholeNumber.map(Double.init) else {
                throw error(key, "must be a list of numbers, got \(Self.describe(item))")
            }
            numbers.append(number)
        }
        return numbers
    }

    /// The line where `key` is set (or this table starts).
    public func line(_ key: String) -> Int? { clamped(value(key)?.mark?.line ?? node.mark?.line) }

    /// A node's line, or past the end: libyaml places the end of a file without a final line
    /// break (and an empty value there) on a line of its own.
    func clamped(_ line: Int?) -> Int? { line.map { min($0, lastLine) } }

    /// This table as a JSON object, for handing to a plugin; in its strings, each key of
    /// `substituting` (such as `${state_dir}`) is replaced by its value.
    public func json(substituting substitutions: [String: String] = [:]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: Self.plain(node, substitutions), options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: Helpers

    static func plain(_ node: Node, _ substitutions: [String: String] = [:]) -> Any {
        switch node {
        case .scalar(let scalar):
            if scalar.style == .plain {
                if node.null != nil { return NSNull() }
                if let bool = node.bool { return bool }
                if let int = node.wholeNumber { return int }
                if let double = node.float { return double }
            }
            return substitutions.reduce(scalar.string) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
        case .mapping(let mapping):
            var object: [String: Any] = [:]
            for (key, value) in mapping { object[key.string ?? "\(key)"] = plain(value, substitutions) }
            return object
        case .sequence(let sequence):
            return sequence.map { plain($0, substitutions) }
        case .alias:
            return NSNull()
        }
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    static func describe(_ node: Node) -> String {
        switch node {
        case .scalar(let scalar): "'\(scalar.string)'"
        case .mapping: "a table"
        case .sequence: "a list"
        case .alias: "an alias"
        }
    }

    static func line(of error: YamlError) -> Int? {
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): mark.line
        default: nil
        }
    }

    /// The last line of `text` an editor shows: one past its last line break. libyaml ends a
    /// stream that lacks a final line break with one of its own, so an error at the end of such
    /// a file, or about an empty value there, would name a line after the last (found by fuzzing).
    static func lastLine(of text: String) -> Int {
        var lines = 1
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n" where previous != "\r", "\r", "\u{85}", "\u{2028}", "\u{2029}": lines += 1
            default: break
            }
            previous = scalar
        }
        return lines
    }

    static func problem(of error: YamlError) -> String {
        switch error {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _): problem
        default: "\(error)"
        }
    }

    static func readProblem(_ path: String) -> String {
        guard FileManager.default.fileExists(atPath: path) else { return "no such file" }
        return FileManager.default.isReadableFile(atPath: path) ? "not UTF-8 text" : "permission denied"
    }
}
