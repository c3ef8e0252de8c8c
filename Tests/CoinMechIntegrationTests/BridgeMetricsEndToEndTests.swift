import CoinMechClient
import CoinMechHarness
import CoinMechProtocol
@testable import CoinMechTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The bridge's `/metrics` while coinsim plays, read over HTTP and scraped by a real Prometheus
/// from Debian, with the shipped alert rules loaded (docs/FLEET.md, "Metrics").
@Suite("Fleet bridge metrics: /metrics shows the cabinet's money and health, and a real Prometheus scrapes it", .serialized)
struct BridgeMetricsEndToEndTests {
    typealias Broker = BridgeEndToEndTests.Broker

    /// One GET on loopback: the status code and the body.
    static func get(_ port: Int, _ path: String) throws -> (code: Int, body: String) {
        let response = try HTTPProbe(port: port).request("GET", path)
        return (response.status, response.body)
    }

    /// The value of the series `name` whose labels include `labels`, from the text format.
    static func value(_ text: String, _ name: String, _ labels: [String: String] = [:]) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name) && !line.hasPrefix("#") {
            let series = line.split(separator: " ").first.map(String.init) ?? ""
            guard series == name || series.hasPrefix(name + "{") else { continue }
            guard labels.allSatisfy({ series.contains("\($0.key)=\"\($0.value)\"") }) else { continue }
            return Double(line.split(separator: " ").last ?? "")
        }
        return nil
    }

    @Test("the credited value and cash box at coinsim's truth; each flag 0 or 1; the broker's loss shown; Prometheus scrapes it and loads the alert rules")
    func metrics() throws {
        let harness = try DaemonHarness()
        let broker = try Broker(dir: TestSupport.temporaryDirectory("mosquitto"), autosave: 1)
        let port = try Loopback.freePort()
        let bridgeArguments = try harness.bridgeConfiguration(mqtt: "{host: 127.0.0.1, port: \(broker.port), keepalive_s: 5, tls: off}", "delivery: {acks: off}", "status: {poll_s: 0.5}", "metrics: {listen: \"127.0.0.1:\(port)\"}")
        try harness.startSimulator("coins: 14\nrate_per_s: 10\nseed: 8\nmix: {quarter: 2, dime: 1, nickel: 1}\n")
        try harness.startDaemon()
        let bridge = try ChildProcess("coinmech-bridge", bridgeArguments)
        var prometheus: ChildProcess?
        defer {
            prometheus?.signal(SIGTERM)
            _ = prometheus?.wait(timeout: 20)
            bridge.signal(SIGKILL)
            _ = bridge.wait(timeout: 10)
            broker.kill()
            _ = try? harness.stopDaemon()
        }
        // coinsim's truth is the independent figure: what ended in the cash box.
        let truth = try harness.simulatorTruth()
        let stored = Double(try #require(truth.storedValue["USD"]))
        #expect(stored > 0)
        var text = ""
        try TestSupport.waitUntil("/metrics at coinsim's stored value", timeout: 20) {
            text = (try? Self.get(port, "/metrics").body) ?? ""
            return Self.value(text, "coinmech_credited_value_minor_total", ["currency": "USD"]) == stored
        }
        #expect(Self.value(text, "coinmech_cash_box_value_minor", ["currency": "USD"]) == stored)
        #expect(Self.value(text, "coinmech_up") == 1 && Self.value(text, "coinmech_bridge_broker_connected") == 1)
        #expect(Self.value(text, "coinmech_bridge_info", ["cabinet": "c-0042", "site": "test-site"]) == 1)
        #expect(Self.value(text, "coinmech_link_state", ["link": "usd", "state": "ok"]) == 1)
        #expect(Self.value(text, "coinmech_link_state", ["link": "usd", "state": "quarantined"]) == 0)
        #expect(Self.value(text, "coinmech_bridge_delivery", ["guarantee": "at_most_once"]) == 1, "acks are off in this test")
        let credited = truth.coins.filter { $0.fate == "stored" }.count
        let counted = ["quarter", "dime", "nickel"].compactMap { Self.value(text, "coinmech_coins_credited_total", ["denomination": $0]) }.reduce(0, +)
        #expect(credited > 0 && Int(counted) == credited, "coins credited \(counted), coinsim stored \(credited)")
        // Every flag is 0 or 1.
        for flag in ["coinmech_up", "coinmech_inhibited", "coinmech_ledger_failing", "coinmech_accepting", "coinmech_bridge_broker_connected"] {
            let value = try #require(Self.value(text, flag), "\(flag) missing")
            #expect(value == 0 || value == 1, "\(flag) \(value)")
        }
        #expect(try Self.get(port, "/nothing").code == 404)
        // Every coin decided is in the decision histogram; the ledger has a size.
        let decided = Double(truth.coins.count)
        #expect(Self.value(text, "coinmech_decision_seconds_count") == decided, "coinsim inserted \(decided) coins")
        #expect(Self.value(text, "coinmech_decision_seconds_bucket", ["le": "+Inf"]) == decided)
        #expect((Self.value(text, "coinmech_ledger_bytes") ?? 0) > 4096)

        // A real Prometheus scrapes it, with the shipped alert rules.
        let promDir = TestSupport.temporaryDirectory("prometheus")
        let promPort = try Loopback.freePort()
        let rules = "\(TestSupport.packageRoot)/packaging/prometheus/coinmech-alerts.yml"
        try """
            global: {scrape_interval: 1s, evaluation_interval: 1s}
            rule_files: ["\(rules)"]
            scrape_configs:
              - job_name: coinmech
                static_configs: [{targets: ["127.0.0.1:\(port)"]}]
            """.write(toFile: "\(promDir)/prometheus.yml", atomically: true, encoding: .utf8)
        prometheus = try ChildProcess("/usr/bin/prometheus", ["--config.file=\(promDir)/prometheus.yml", "--storage.tsdb.path=\(promDir)/data",
                                                             "--web.listen-address=127.0.0.1:\(promPort)"], absolute: true)
        try TestSupport.waitUntil("Prometheus holding the scraped credited value", timeout: 60) {
            guard prometheus?.isRunning == true else { throw TestFailure("prometheus exited: \(prometheus?.stderr ?? "")") }
            guard let reply = try? Self.get(promPort, "/api/v1/query?query=coinmech_credited_value_minor_total"), reply.code == 200,
                  let result = JSON.parse(reply.body)?["data"]?["result"]?.array?.first else { return false }
            return result["value"]?.array?.last?.string.flatMap(Double.init) == stored && result["metric"]?["currency"] == "USD"
        }
        try TestSupport.waitUntil("the alert rules loaded and evaluated", timeout: 30) {
            guard let reply = try? Self.get(promPort, "/api/v1/rules"), let groups = JSON.parse(reply.body)?["data"]?["groups"]?.array,
                  let rules = groups.first?["rules"]?.array else { return false }
            return rules.count == 9 && rules.allSatisfy { $0["health"] == "ok" }
        }

        // The broker goes: /metrics says so within a poll or two.
        broker.kill()
        try TestSupport.waitUntil("/metrics showing the broker lost", timeout: 20) {
            Self.value((try? Self.get(port, "/metrics").body) ?? "", "coinmech_bridge_broker_connected") == 0
        }
    }

    @Test("/metrics closes a connection idle past metrics.idle_timeout_s, half a request included, and holds at most metrics.max_connections; SIGTERM stops the bridge through its service group")
    func metricsBounded() throws {
        let harness = try DaemonHarness()
        let port = try Loopback.freePort(), nowhere = try Loopback.freePort()
        // No daemon and no broker: /metrics is served from the start, whatever the bridge waits for.
        let arguments = try harness.bridgeConfiguration(mqtt: "{host: 127.0.0.1, port: \(nowhere), keepalive_s: 5, tls: off}",
                                                        "metrics: {listen: \"127.0.0.1:\(port)\", idle_timeout_s: 1, max_connections: 2}")
        let bridge = try ChildProcess("coinmech-bridge", arguments)
        defer {
            bridge.signal(SIGKILL)
            _ = bridge.wait(timeout: 10)
        }
        try TestSupport.waitUntil("/metrics served", timeout: 20) { (try? Self.get(port, "/metrics").code) == 200 }
        /// Whether the server closes `fd` within `seconds` (recv sees the end).
        func closed(_ fd: Int32, within seconds: Int) -> Bool {
            var timeout = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 256)
            return recv(fd, &buffer, buffer.count, 0) == 0
        }
        let first = try #require(Loopback.connect(port)), second = try #require(Loopback.connect(port))
        defer {
            close(first)
            close(second)
        }
        let half = Array("GET /metrics HTTP/1.1\r\nHost: x\r\n".utf8)
        _ = send(second, half, half.count, Int32(MSG_NOSIGNAL))
        // Both held: a third is closed at once, and served again once they are gone.
        let third = try #require(Loopback.connect(port))
        #expect(closed(third, within: 2), "a third connection beyond max_connections was kept")
        close(third)
        #expect(closed(first, within: 5) && closed(second, within: 5), "idle connections kept past the idle timeout")
        try TestSupport.waitUntil("/metrics served again", timeout: 10) { (try? Self.get(port, "/metrics").code) == 200 }
        bridge.signal(SIGTERM)
        #expect(bridge.wait(timeout: 15) == 0, "SIGTERM: \(bridge.stderr.suffix(1000))")
        #expect(bridge.stderr.contains("stopped; cursor"))
    }
}
