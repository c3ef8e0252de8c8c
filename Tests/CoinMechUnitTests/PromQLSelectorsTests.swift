import CoinMechHarness
@testable import CoinMechTestSupport
import Foundation
import Testing

/// The PromQL tokenizer and the check `make test-fleet` makes with it (SeriesCheck): the shipped
/// rules' and dashboard's expressions against the series a live fleet and bridge export.
@Suite("PromQL selectors: the series an expression reads, and the check that the shipped rules and dashboard read exported series")
struct PromQLSelectorsTests {
    typealias Selector = PromQLSelectors.Selector

    static func names(_ expression: String) throws -> [String] { try PromQLSelectors.selectors(in: expression).map(\.description) }

    @Test("metric names with their = matchers; functions, aggregations, keywords, label lists, durations, strings and Grafana's variables are not series")
    func tokenizer() throws {
        let cases: [(String, [String])] = [
            ("up{job=\"coinmech\"} == 0", ["up{job=\"coinmech\"}"]),
            ("coinmech_ledger_failing == 1", ["coinmech_ledger_failing"]),
            ("sum by (instance) (increase(coinmech_coins_credited_total[6h])) == 0", ["coinmech_coins_credited_total"]),
            ("sum(rate(a_total[5m])) by (le, instance) / on(instance) group_left(cabinet, site) b_info", ["a_total", "b_info"]),
            ("max without (instance) (coinmech_fleet_alerts_open{kind=\"jam\"}) > 0", ["coinmech_fleet_alerts_open{kind=\"jam\"}"]),
            ("histogram_quantile(0.99, sum by (instance, le) (rate(coinmech_decision_seconds_bucket{instance=~\"$cabinet\"}[$__rate_interval])))",
             ["coinmech_decision_seconds_bucket"]),
            ("a and on() hour() >= 8 < 22 or b unless ignoring (x) c offset 1h30m", ["a", "b", "c"]),
            ("x > bool 1e-3 + 0x1F - .5 + Inf - NaN", ["x"]),
            ("{__name__=\"by_name\", state!=\"ok\"}", ["by_name"]),
            ("label_replace(a{l=\"v,}\"}, \"dst\", \"$1\", \"src\", \"(.*)\")", ["a{l=\"v,}\"}"]),
            ("count_values(\"version\", b) * on (instance) group_left c[5m:1m]", ["b", "c"]),
            ("sum by (kind) (increase(x_total{instance=~\"${fleet:regex}\"}[$__rate_interval])) # a comment naming not_a_series", ["x_total"]),
            ("a{l='single \\' quoted'} + b{l=`raw \\`}", ["a{l=\"single ' quoted\"}", "b{l=\"raw \\\"}"]),
            ("vector(1) == 0", []),
        ]
        for (expression, expected) in cases {
            #expect(try Self.names(expression) == expected, "\(expression)")
        }
        // The labels of every matcher, regex and negative ones included.
        let selector = try #require(PromQLSelectors.selectors(in: "a{x=\"1\", y!=\"2\", z=~\"3\"}").first)
        #expect(selector.labels == ["x", "y", "z"] && selector.equal == ["x": "1"])
    }

    @Test("broken expressions are errors, not silence")
    func malformed() {
        for expression in ["a{l=\"open", "rate(a[5m)", "a{l}", "a{=\"v\"}", "{l=\"no name\"}"] {
            #expect(throws: PromQLSelectors.ParseError.self, "\(expression)") { try PromQLSelectors.selectors(in: expression) }
        }
    }

    static let metrics = """
        # HELP coinmech_decision_seconds Decisions
        # TYPE coinmech_decision_seconds histogram
        coinmech_decision_seconds_bucket{le="0.005"} 3
        coinmech_decision_seconds_bucket{le="+Inf"} 4
        coinmech_decision_seconds_sum 0.01
        coinmech_decision_seconds_count 4
        coinmech_fleet_alerts_open{kind="jam"} 0
        coinmech_fleet_alerts_open{kind="offline"} 1
        coinmech_link_state{link="usd",state="quarantined"} 0
        coinmech_bridge_info{cabinet="c-1",site="north \\"x\\", y",bridge_version="1"} 1
        coinmech_fleet_events_stored_total 12
        """

    @Test("the check: names exactly as exported (a histogram's _bucket, a counter's _total), labels carried, = values present; Prometheus's own up allowed")
    func check() throws {
        let exported = SeriesCheck.exported(Self.metrics)
        #expect(exported["coinmech_bridge_info"]?.first == ["cabinet": "c-1", "site": "north \"x\", y", "bridge_version": "1"])
        #expect(exported["coinmech_decision_seconds"] == nil && exported["coinmech_decision_seconds_bucket"]?.count == 2)
        func problems(_ text: String, required: Set<String> = []) -> [String] {
            SeriesCheck.problems([.init(source: "t", text: text, requiredLabels: required)], exported: exported)
        }
        #expect(problems("histogram_quantile(0.99, sum by (le) (rate(coinmech_decision_seconds_bucket[5m])))").isEmpty)
        #expect(problems("max(coinmech_fleet_alerts_open{kind=\"jam\", instance=~\"$fleet\", job=\"coinmech-fleet\"}) + up{job=\"x\"}").isEmpty)
        #expect(problems("coinmech_link_state{state=\"quarantined\"} * on (instance) group_left (cabinet) coinmech_bridge_info").isEmpty)
        #expect(problems("coinmech_bridge_info", required: ["cabinet"]).isEmpty)
        #expect(problems("rate(coinmech_fleet_events_stored_total[5m])").isEmpty)
        // Each kind of mistake, found.
        #expect(problems("rate(coinmech_decision_seconds[5m])") == ["t: rate(coinmech_decision_seconds[5m]): coinmech_decision_seconds is not exported"])
        #expect(problems("rate(coinmech_fleet_events_stored[5m])").first?.hasSuffix("coinmech_fleet_events_stored is not exported") == true)
        #expect(problems("coinmech_fleet_alerts_open{kind=\"jams\"}").first?.hasSuffix("no coinmech_fleet_alerts_open has kind=\"jams\"") == true)
        #expect(problems("coinmech_link_state{status=\"quarantined\"}").first?.hasSuffix("coinmech_link_state has no label status") == true)
        #expect(problems("coinmech_bridge_info", required: ["cabinett"]).first?.hasSuffix("coinmech_bridge_info has no label cabinett") == true)
        #expect(problems("vector(1)").first?.hasSuffix("names no series") == true)
        #expect(problems("rate(x[5m)").count == 1)
    }

    @Test("every expression of the shipped rules and dashboard parses and names a series; the dashboard is importable (schemaVersion, a Prometheus datasource variable every panel uses)")
    func shipped() throws {
        let root = TestSupport.packageRoot
        let rules = try ["coinmech-alerts.yml", "coinmech-fleet-alerts.yml"].flatMap { try SeriesCheck.ruleExpressions("\(root)/packaging/prometheus/\($0)") }
        let dashboard = try SeriesCheck.dashboardExpressions("\(root)/packaging/grafana/coinmech-fleet.json")
        #expect(rules.count == 26 && dashboard.count > 30, "\(rules.count) rules, \(dashboard.count) dashboard queries")
        for expression in rules + dashboard {
            let selectors = try PromQLSelectors.selectors(in: expression.text)
            #expect(!selectors.isEmpty && selectors.allSatisfy { $0.metric == "up" || $0.metric.hasPrefix("coinmech_") }, "\(expression): \(selectors)")
        }
        #expect(throws: SeriesCheck.FileError.self) {
            let path = "\(TestSupport.temporaryDirectory("rules"))/block.yml"
            try "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: |\n          up == 0\n".write(toFile: path, atomically: true, encoding: .utf8)
            _ = try SeriesCheck.ruleExpressions(path)
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(root)/packaging/grafana/coinmech-fleet.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect((json["schemaVersion"] as? Int ?? 0) >= 36 && json["uid"] as? String == "coinmech-fleet")
        let variables = (json["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        #expect(variables.contains { $0["type"] as? String == "datasource" && $0["query"] as? String == "prometheus" && $0["name"] as? String == "datasource" })
        var ids: Set<Int> = []
        for panel in json["panels"] as? [[String: Any]] ?? [] {
            ids.insert(panel["id"] as? Int ?? -1)
            #expect(panel["gridPos"] is [String: Any])
            guard panel["type"] as? String != "row" else { continue }
            let sources = [panel["datasource"]] + (panel["targets"] as? [[String: Any]] ?? []).map { $0["datasource"] }
            #expect(sources.allSatisfy { ($0 as? [String: Any])?["uid"] as? String == "${datasource}" }, "\(panel["title"] ?? "?")")
        }
        #expect(ids.count == (json["panels"] as? [Any])?.count && !ids.contains(-1), "panel ids unique")
    }
}
