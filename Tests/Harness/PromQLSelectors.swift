/// The series a PromQL expression reads: each vector selector's metric name and its equality
/// matchers. For checking that the shipped alert rules and Grafana dashboard name series the fleet
/// and the bridge really export (`SeriesCheck`). promtool has no parser on its command line, so
/// this is a tokenizer: an identifier is a metric name unless it calls (`rate(`), is a keyword
/// (`by`, `and`, `offset` …) or sits in a label list (`by (…)`, `on (…)`, `group_left (…)`);
/// strings, range and subquery brackets `[…]` and Grafana's `$variables` are skipped.
public enum PromQLSelectors {
    public struct Selector: Hashable, CustomStringConvertible {
        public var metric: String
        /// `label="value"` matchers; regex and negative ones are not checked against values.
        public var equal: [String: String]
        /// Every label a matcher names (`=`, `!=`, `=~`, `!~`).
        public var labels: Set<String>

        public init(metric: String, equal: [String: String] = [:], labels: Set<String>? = nil) {
            self.metric = metric
            self.equal = equal
            self.labels = labels ?? Set(equal.keys)
        }

        public var description: String {
            equal.isEmpty ? metric : "\(metric){\(equal.sorted { $0.key < $1.key }.map { "\($0.key)=\"\($0.value)\"" }.joined(separator: ","))}"
        }
    }

    public struct ParseError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Words PromQL reserves (binary operators, modifiers, the label-list clauses) and the
    /// literals; matched without regard to case, as PromQL does.
    static let keywords: Set<String> = ["and", "or", "unless", "atan2", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "inf", "nan"]
    /// Keywords followed by a parenthesised list of labels, not of expressions.
    static let labelLists: Set<String> = ["by", "without", "on", "ignoring", "group_left", "group_right"]

    public static func selectors(in expression: String) throws -> [Selector] {
        let text = Array(expression.unicodeScalars)
        var found: [Selector] = []
        var index = 0
        func peekNonSpace(from start: Int) -> Int {
            var at = start
            while at < text.count, text[at].properties.isWhitespace { at += 1 }
            return at
        }
        func isIdentifierStart(_ c: Unicode.Scalar) -> Bool { c == "_" || c == ":" || ("a"..."z").contains(c) || ("A"..."Z").contains(c) }
        func isIdentifierPart(_ c: Unicode.Scalar) -> Bool { isIdentifierStart(c) || ("0"..."9").contains(c) }
        /// The end of the string literal that opens at `start` (its closing quote's index + 1).
        func skipString(_ start: Int) throws -> Int {
            let quote = text[start]
            var at = start + 1
            while at < text.count {
                if text[at] == "\\" && quote != "`" { at += 2; continue }
                if text[at] == quote { return at + 1 }
                at += 1
            }
            throw ParseError(description: "an unterminated string in \(expression)")
        }
        func stringValue(_ start: Int, _ end: Int) -> String {
            var value = ""
            var at = start + 1
            let raw = text[start] == "`"
            while at < end - 1 {
                if text[at] == "\\" && !raw && at + 1 < end - 1 { at += 1 }
                value.unicodeScalars.append(text[at])
                at += 1
            }
            return value
        }
        /// Past the bracket that closes the one at `start`, strings inside skipped.
        func skipBracketed(_ start: Int, open: Unicode.Scalar, close: Unicode.Scalar) throws -> Int {
            var depth = 0, at = start
            while at < text.count {
                let c = text[at]
                if c == "\"" || c == "'" || c == "`" { at = try skipString(at); continue }
                if c == open { depth += 1 } else if c == close {
                    depth -= 1
                    if depth == 0 { return at + 1 }
                }
                at += 1
            }
            throw ParseError(description: "an unclosed \(open) in \(expression)")
        }
        /// The matchers `{…}` at `start`: into `selector`, returning the index past `}`.
        func matchers(_ start: Int, into selector: inout Selector) throws -> Int {
            var at = start + 1
            while true {
                at = peekNonSpace(from: at)
                guard at < text.count else { throw ParseError(description: "an unclosed { in \(expression)") }
                if text[at] == "}" { return at + 1 }
                if text[at] == "," { at += 1; continue }
                var label = ""
                if text[at] == "\"" {
                    // A quoted label name (UTF-8 names, Prometheus 3).
                    let end = try skipString(at)
                    label = stringValue(at, end)
                    at = end
                } else {
                    guard isIdentifierStart(text[at]) else { throw ParseError(description: "a label name expected at \(at) in \(expression)") }
                    while at < text.count, isIdentifierPart(text[at]) { label.unicodeScalars.append(text[at]); at += 1 }
                }
                at = peekNonSpace(from: at)
                var op = ""
                while at < text.count, "=!~".unicodeScalars.contains(text[at]) { op.unicodeScalars.append(text[at]); at += 1 }
                guard ["=", "!=", "=~", "!~"].contains(op) else { throw ParseError(description: "no matcher operator after \(label) in \(expression)") }
                at = peekNonSpace(from: at)
                guard at < text.count, "\"'`".unicodeScalars.contains(text[at]) else { throw ParseError(description: "no string after \(label)\(op) in \(expression)") }
                let end = try skipString(at)
                let value = stringValue(at, end)
                at = end
                if label == "__name__" && op == "=" {
                    selector.metric = value
                } else {
                    selector.labels.insert(label)
                    if op == "=" { selector.equal[label] = value }
                }
            }
        }

        while index < text.count {
            let c = text[index]
            if c.properties.isWhitespace { index += 1; continue }
            if c == "\"" || c == "'" || c == "`" { index = try skipString(index); continue }
            if c == "#" {
                // A comment, to the line's end.
                while index < text.count, text[index] != "\n" { index += 1 }
                continue
            }
            if c == "[" { index = try skipBracketed(index, open: "[", close: "]"); continue }
            if c == "$" {
                // Grafana's variables: $name, ${name}, ${name:format}, $__rate_interval.
                index += 1
                if index < text.count, text[index] == "{" { index = try skipBracketed(index, open: "{", close: "}") } else {
                    while index < text.count, isIdentifierPart(text[index]) { index += 1 }
                }
                continue
            }
            if ("0"..."9").contains(c) || (c == "." && index + 1 < text.count && ("0"..."9").contains(text[index + 1])) {
                // A number or a duration (1e-3, 0x1f, 5m, 1h30m).
                let start = index
                let hex = c == "0" && index + 1 < text.count && (text[index + 1] == "x" || text[index + 1] == "X")
                while index < text.count {
                    let d = text[index]
                    let exponentSign = !hex && (d == "+" || d == "-") && index > start && (text[index - 1] == "e" || text[index - 1] == "E")
                    guard isIdentifierPart(d) || d == "." || exponentSign else { break }
                    index += 1
                }
                continue
            }
            if c == "{" {
                // A selector without a name outside: {__name__="…"}.
                var selector = Selector(metric: "")
                index = try matchers(index, into: &selector)
                guard !selector.metric.isEmpty else { throw ParseError(description: "a selector without a metric name in \(expression)") }
                found.append(selector)
                continue
            }
            if isIdentifierStart(c) {
                var word = ""
                while index < text.count, isIdentifierPart(text[index]) { word.unicodeScalars.append(text[index]); index += 1 }
                let next = peekNonSpace(from: index)
                let lower = word.lowercased()
                if Self.labelLists.contains(lower) {
                    if next < text.count, text[next] == "(" { index = try skipBracketed(next, open: "(", close: ")") }
                    continue
                }
                if Self.keywords.contains(lower) { continue }
                // A call: a function or an aggregation (`sum (…)` and `sum by (…) (…)` alike).
                if next < text.count, text[next] == "(" { continue }
                if ["by", "without"].contains(Self.word(at: next, in: text)) { continue }
                var selector = Selector(metric: word)
                if next < text.count, text[next] == "{" { index = try matchers(next, into: &selector) }
                found.append(selector)
                continue
            }
            index += 1
        }
        return found
    }

    /// The identifier that starts at `start`, lowercased ("" if none).
    static func word(at start: Int, in text: [Unicode.Scalar]) -> String {
        var word = ""
        var at = start
        while at < text.count, text[at] == "_" || text[at].properties.isAlphabetic || ("0"..."9").contains(text[at]) { word.unicodeScalars.append(text[at]); at += 1 }
        return word.lowercased()
    }
}
