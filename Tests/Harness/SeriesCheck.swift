import Foundation

/// Whether the shipped alert rules (packaging/prometheus) and Grafana dashboard (packaging/grafana)
/// read series that a live coinmech-fleet and coinmech-bridge really export: every selector's
/// metric name exactly as exported (`_bucket`, `_total` included), every label its matchers name,
/// and every value an `=` matcher asks for, found in the scraped `/metrics` text.
/// `make test-fleet` runs it against the chaos run's fleet and cabinets (FleetChaosRun).
public enum SeriesCheck {
    /// Series Prometheus makes itself, not any exporter: `up` and the scrape's figures, and the
    /// alerts' own.
    public static let prometheusOwn: Set<String> = [
        "up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling", "scrape_series_added", "ALERTS", "ALERTS_FOR_STATE",
    ]
    /// Labels Prometheus adds to every series at the scrape.
    public static let targetLabels: Set<String> = ["job", "instance"]

    public struct Expression: CustomStringConvertible {
        /// Where it is: the file, and the alert or panel.
        public var source: String
        public var text: String
        /// Labels the expression's series must carry though it names no matcher for them
        /// (Grafana's `label_values(series, label)`).
        public var requiredLabels: Set<String> = []
        public init(source: String, text: String, requiredLabels: Set<String> = []) {
            self.source = source
            self.text = text
            self.requiredLabels = requiredLabels
        }
        public var description: String { "\(source): \(text)" }
    }

    public struct FileError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Every `expr:` of a Prometheus rules file. Expressions are kept on one line there (a
    /// block scalar, `expr: |`, is refused: this reader would see only its first line).
    public static func ruleExpressions(_ path: String) throws -> [Expression] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var found: [Expression] = []
        var name = "?"
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            for key in ["- alert:", "- record:"] where trimmed.hasPrefix(key) { name = trimmed.dropFirst(key.count).trimmingCharacters(in: .whitespaces) }
            guard trimmed.hasPrefix("expr:") else { continue }
            var value = trimmed.dropFirst("expr:".count).trimmingCharacters(in: .whitespaces)
            if value.hasPrefix("|") || value.hasPrefix(">") || value.isEmpty {
                throw FileError(description: "\(path):\(number + 1): \(name)'s expr is not on one line")
            }
            if let quote = value.first, quote == "'" || quote == "\"", value.count >= 2, value.last == quote {
                value = String(value.dropFirst().dropLast())
                value = quote == "'" ? value.replacingOccurrences(of: "''", with: "'") : value.replacingOccurrences(of: "\\\"", with: "\"")
            }
            found.append(Expression(source: "\(path):\(number + 1) \(name)", text: value))
        }
        return found
    }

    /// Every query of a Grafana dashboard: the panels' targets (rows' panels too) and the
    /// template variables' queries (`label_values(series, label)` read as its series, with the
    /// label required).
    public static func dashboardExpressions(_ path: String) throws -> [Expression] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let dashboard = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { throw FileError(description: "\(path): not a JSON object") }
        var found: [Expression] = []
        func panels(_ list: [[String: Any]]) {
            for panel in list {
                let title = panel["title"] as? String ?? "?"
                for target in panel["targets"] as? [[String: Any]] ?? [] {
                    if let expr = target["expr"] as? String { found.append(Expression(source: "\(path) panel \"\(title)\"", text: expr)) }
                }
                panels(panel["panels"] as? [[String: Any]] ?? [])
            }
        }
        panels(dashboard["panels"] as? [[String: Any]] ?? [])
        for variable in (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? [] where variable["type"] as? String == "query" {
            let query = (variable["query"] as? String) ?? ((variable["query"] as? [String: Any])?["query"] as? String) ?? ""
            let source = "\(path) variable $\(variable["name"] as? String ?? "?")"
            if query.hasPrefix("label_values("), query.hasSuffix(")"), let comma = query.lastIndex(of: ",") {
                let series = query[query.index(query.startIndex, offsetBy: "label_values(".count)..<comma]
                let label = query[query.index(after: comma)...].dropLast().trimmingCharacters(in: .whitespaces)
                found.append(Expression(source: source, text: String(series), requiredLabels: [label]))
            } else {
                found.append(Expression(source: source, text: query))
            }
        }
        return found
    }

    /// The samples of a `/metrics` text by metric name: each sample's labels.
    public static func exported(_ metrics: String) -> [String: [[String: String]]] {
        var samples: [String: [[String: String]]] = [:]
        for line in metrics.split(separator: "\n") where !line.hasPrefix("#") {
            let line = Array(line.unicodeScalars)
            var at = 0
            var name = ""
            while at < line.count, line[at] != "{", line[at] != " " { name.unicodeScalars.append(line[at]); at += 1 }
            guard !name.isEmpty else { continue }
            var labels: [String: String] = [:]
            if at < line.count, line[at] == "{" {
                at += 1
                while at < line.count, line[at] != "}" {
                    var label = ""
                    while at < line.count, line[at] != "=" { if line[at] != "," && line[at] != " " { label.unicodeScalars.append(line[at]) }; at += 1 }
                    at += 2  // `="`
                    var value = ""
                    while at < line.count, line[at] != "\"" {
                        if line[at] == "\\", at + 1 < line.count {
                            at += 1
                            value.unicodeScalars.append(line[at] == "n" ? "\n" : line[at])
                        } else {
                            value.unicodeScalars.append(line[at])
                        }
                        at += 1
                    }
                    at += 1
                    while at < line.count, line[at] == "," || line[at] == " " { at += 1 }
                    labels[label] = value
                }
            }
            samples[name, default: []].append(labels)
        }
        return samples
    }

    /// What is wrong, one line each: an expression that does not parse or names no series, a
    /// series not exported, a label it does not carry, a value no sample has.
    public static func problems(_ expressions: [Expression], exported: [String: [[String: String]]]) -> [String] {
        var problems: [String] = []
        for expression in expressions {
            let selectors: [PromQLSelectors.Selector]
            do { selectors = try PromQLSelectors.selectors(in: expression.text) } catch {
                problems.append("\(expression): \(error)")
                continue
            }
            if selectors.isEmpty { problems.append("\(expression): names no series") }
            for selector in selectors {
                if prometheusOwn.contains(selector.metric) { continue }
                guard let samples = exported[selector.metric] else {
                    problems.append("\(expression): \(selector.metric) is not exported")
                    continue
                }
                for label in selector.labels.union(expression.requiredLabels).subtracting(targetLabels).sorted() where !samples.contains(where: { $0[label] != nil }) {
                    problems.append("\(expression): \(selector.metric) has no label \(label)")
                }
                for (label, value) in selector.equal.sorted(by: { $0.key < $1.key }) where !targetLabels.contains(label) && samples.contains(where: { $0[label] != nil }) {
                    if !samples.contains(where: { $0[label] == value }) { problems.append("\(expression): no \(selector.metric) has \(label)=\"\(value)\"") }
                }
            }
        }
        return problems
    }
}
