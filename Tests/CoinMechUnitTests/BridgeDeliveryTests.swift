import CoinMechBridge
import CoinMechMQTT
import CoinMechProtocol
import CoinMechSettings
@testable import CoinMechTestSupport
import Foundation
import Testing

/// The bridge's delivery rules (docs/FLEET.md B4–B10), its cursor file and its configuration,
/// each checked against the contract's words.
@Suite("Fleet bridge: seqs in order from the consumer's cursor, a window at a time, again after a broker reconnect")
struct BridgeDeliveryTests {
    static func delivery(cursor: Int64 = 0, window: Int = 4, inflight: Int = 20, acks: Bool = true) -> BridgeDelivery {
        BridgeDelivery(cursor: cursor, window: window, maxInflight: inflight, acksRequired: acks, ackTimeout: 30, now: 0)
    }

    @Test("in order without a gap: a duplicate is skipped, a hole is named for reading first (B4)")
    func order() {
        var d = Self.delivery(cursor: 10)
        #expect(d.subscribeFrom == 10, "a start subscribes from the cursor")
        d.subscribed()
        #expect(d.take(11, now: 0) == .publish)
        #expect(d.take(11, now: 0) == .duplicate)
        #expect(d.take(14, now: 0) == .gap(from: 12, to: 13))
        #expect(d.take(12, now: 0) == .publish && d.take(13, now: 0) == .publish && d.take(14, now: 0) == .publish)
    }

    @Test("at most a window beyond the cursor, and at most max_inflight awaiting PUBACK (B6)")
    func window() {
        var d = Self.delivery(window: 3, inflight: 2)
        d.subscribed()
        for seq in Int64(1)...2 {
            #expect(d.canPublish)
            #expect(d.take(seq, now: 0) == .publish)
            d.sent(seq, mid: Int32(seq))
        }
        #expect(!d.canPublish, "two in flight")
        d.puback(1, now: 1)
        #expect(d.canPublish)
        #expect(d.take(3, now: 0) == .publish)
        d.sent(3, mid: 3)
        d.puback(2, now: 1)
        d.puback(3, now: 1)
        #expect(!d.canPublish && d.waitingForAck, "three beyond a cursor of 0: waits for an ack, whatever PUBACK said")
        let moved = d.acked(2, now: 2)
        #expect(moved && d.canPublish && d.cursor == 2)
    }

    @Test("the cursor never goes down; an ack beyond what was published is where to go on from (B5, B8)")
    func cursor() {
        var d = Self.delivery(cursor: 5)
        d.subscribed()
        let lower = d.acked(4, now: 1), same = d.acked(5, now: 1), ahead = d.acked(40, now: 1)
        #expect(!lower && !same && ahead)
        #expect(d.subscribeFrom == 40 && d.published == 40)
    }

    @Test("a broker reconnect rewinds to the cursor; a lost daemon goes on after the last published (B5)")
    func rewinds() {
        var d = Self.delivery(cursor: 3, window: 100)
        d.subscribed()
        for seq in Int64(4)...9 { _ = d.take(seq, now: 0) }
        d.daemonLost()
        #expect(d.subscribeFrom == 9)
        d.subscribed()
        d.brokerConnected(now: 5)
        #expect(d.subscribeFrom == 3 && d.published == 3)
        #expect(d.take(4, now: 0) == .publish, "everything after the cursor again")
    }

    @Test("no ack for ack_timeout_s with events unacked: everything after the cursor again, the wait doubling to 10 minutes (B7)")
    func ackTimeout() {
        var d = Self.delivery(cursor: 0, window: 100)
        d.subscribed()
        _ = d.take(1, now: 0)
        d.tick(now: 29)
        #expect(d.subscribeFrom == nil)
        d.tick(now: 30)
        #expect(d.subscribeFrom == 0 && d.rewinds == 1 && d.ackWait == 60)
        d.subscribed()
        _ = d.take(1, now: 30)
        d.tick(now: 89)
        #expect(d.subscribeFrom == nil)
        d.tick(now: 90)
        #expect(d.rewinds == 2 && d.ackWait == 120)
        for round in 1...10 {
            d.subscribed()
            _ = d.take(1, now: 1e6 * Double(round))
            d.tick(now: 1e6 * Double(round) + 700)
        }
        #expect(d.ackWait == 600)
        d.subscribed()
        _ = d.take(1, now: 0)
        let moved = d.acked(1, now: 2e7)
        #expect(moved && d.rewinds == 0 && d.ackWait == 30, "progress resets the wait")
    }

    @Test("a quiet spell is no reason to resend: the wait for an ack starts with the first event unacked")
    func quietSpell() {
        var d = Self.delivery(cursor: 0, window: 100)
        d.subscribed()
        _ = d.take(1, now: 1)
        let moved = d.acked(1, now: 5)
        // Nothing for a long while, then a coin.
        let taken = d.take(2, now: 1000)
        let early = d.tick(now: 1000) || d.tick(now: 1029)
        #expect(moved && taken == .publish && !early, "resent at once after a quiet spell")
        let due = d.tick(now: 1030)
        #expect(due && d.subscribeFrom == 1)
        // A broker reconnect starts the back-off afresh.
        d.brokerConnected(now: 2000)
        #expect(d.rewinds == 0 && d.ackWait == 30)
    }

    @Test("seqs the ledger does not have are stepped past, never published (B4)")
    func skipHole() {
        var d = Self.delivery(cursor: 0, window: 100)
        d.subscribed()
        let first = d.take(1, now: 0), hole = d.take(4, now: 0)
        #expect(first == .publish && hole == .gap(from: 2, to: 3))
        d.skip(through: 3)
        let after = d.take(4, now: 0)
        #expect(after == .publish && d.published == 4 && d.cursor == 0, "the cursor stays the consumer's")
    }

    @Test("with acks off the cursor follows PUBACK, in order (B10)")
    func acksOff() {
        var d = Self.delivery(acks: false)
        d.subscribed()
        for seq in Int64(1)...3 {
            _ = d.take(seq, now: 0)
            d.sent(seq, mid: Int32(100 + seq))
        }
        d.puback(102, now: 1)
        #expect(d.cursor == 0, "2 without 1 is not contiguous")
        d.puback(101, now: 1)
        #expect(d.cursor == 2)
        let taken = d.acked(3, now: 1)
        #expect(!taken && d.cursor == 2, "acks are not the cursor's when they are off")
    }

    @Test("the cursor file: written whole or not at all, read back; another cabinet's is ignored (B8)")
    func cursorFile() throws {
        let directory = TestSupport.temporaryDirectory("bridge-cursor")
        let cursor = BridgeCursor(directory: directory, cabinet: "c-0042")
        #expect(cursor.read().acked == 0 && cursor.read().warning == nil)
        try cursor.write(1201, time: 1795290001.43)
        #expect(cursor.read().acked == 1201)
        let text = try String(contentsOfFile: cursor.path, encoding: .utf8)
        #expect(text == #"{"acked":1201,"cabinet":"c-0042","time":1795290001.4,"v":1}"# + "\n")
        #expect(!FileManager.default.fileExists(atPath: cursor.path + ".tmp"))
        let other = BridgeCursor(directory: directory, cabinet: "c-0043")
        #expect(other.read().acked == 0 && other.read().warning?.contains("cabinet 'c-0042'") == true)
        try "{not json".write(toFile: cursor.path, atomically: true, encoding: .utf8)
        #expect(cursor.read().acked == 0 && cursor.read().warning?.contains("not a cursor file") == true)
    }

    @Test("the configuration: ids checked, the prefix filled in, each error naming the file, the line and the key", arguments: [
        ("cabinet: C42\nsite: s\nmqtt: {host: b}\n", "cabinet", 1),
        ("cabinet: coinmech-1\nsite: s\nmqtt: {host: b}\n", "cabinet", 1),
        ("cabinet: c1\nmqtt: {host: b}\n", "site", nil),
        ("cabinet: c1\nsite: s\n", "mqtt", nil),
        ("cabinet: c1\nsite: s\nmqtt: {host: b, prefix: 'a/+/'}\n", "mqtt.prefix", 3),
        ("cabinet: c1\nsite: s\nmqtt: {host: b, port: 0}\n", "mqtt.port", 3),
        ("cabinet: c1\nsite: s\nmqtt: {host: b}\ndelivery: {acks: maybe}\n", "delivery.acks", 4),
        ("cabinet: c1\nsite: s\nmqtt: {host: b}\nfleet: 1\n", "fleet", 4),
        ("cabinet: c1\nsite: s\nmqtt: {host: b}\ncommands: {allow: [status, collect]}\n", "commands.allow", 4),
        ("cabinet: c1\nsite: s\nmqtt: {host: b}\ncommands: {max_ahead_s: 0}\n", "commands.max_ahead_s", 4),
        ("cabinet: c1\nsite: s\nmqtt: {host: b}\nmetrics: {listen: 9786}\n", "metrics.listen", 4),
        ("cabinet: c1\nsite: s\nmqtt: {host: b}\nmetrics: {listen: 'localhost:http'}\n", "metrics.listen", 4),
    ] as [(String, String, Int?)])
    func configurationErrors(text: String, key: String, line: Int?) {
        #expect(throws: SettingsError.self) { try BridgeConfiguration.parse(try SettingsTable.parse(text, file: "b.yaml")) }
        do throws(SettingsError) {
            _ = try BridgeConfiguration.parse(try SettingsTable.parse(text, file: "b.yaml"))
        } catch {
            #expect(error.file == "b.yaml" && error.key == key, "\(error)")
            if let line { #expect(error.line == line, "\(error)") }
        }
    }

    @Test("the defaults and the prefix, as docs/FLEET.md gives them")
    func defaults() throws {
        let c = try BridgeConfiguration.parse(try SettingsTable.parse("cabinet: c-0042\nsite: paris-nord\nmqtt: {host: broker}\n", file: "b.yaml"))
        #expect(c.topic("event") == "coinmech/v1/paris-nord/c-0042/event")
        #expect(c.mqtt.port == 8883 && c.mqtt.clientID == "coinmech-bridge-c-0042" && c.mqtt.keepaliveSeconds == 30 && c.mqtt.maxInflight == 20)
        #expect(c.mqtt.tls == MQTTTLS(caPath: "/etc/ssl/certs"), "TLS by default, the broker checked against the system's CAs")
        #expect(c.delivery.acksRequired && c.delivery.window == 256 && c.delivery.ackTimeoutSeconds == 30)
        #expect(c.socketPath == "/run/coinmech/coinmechd.sock" && c.stateDirectory == "/var/lib/coinmech-bridge")
        #expect(c.commands.allow == [.status, .totals, .resend] && c.commands.maxAheadSeconds == 600 && c.commands.answerTimeoutSeconds == 60,
                "B11: read-only by default; inhibit and reload are the operator's to add")
        #expect(c.metricsListen?.host == "127.0.0.1" && c.metricsListen?.port == 9786, "loopback by default")
        let off = try BridgeConfiguration.parse(try SettingsTable.parse("cabinet: c1\nsite: s\nmqtt: {host: b}\nmetrics: {listen: off}\n", file: "b.yaml"))
        #expect(off.metricsListen == nil)
        let plain = try BridgeConfiguration.parse(try SettingsTable.parse("cabinet: c1\nsite: s\nmqtt: {host: b, tls: off}\n", file: "b.yaml"))
        #expect(plain.mqtt.tls == nil && plain.mqtt.port == 1883, "plaintext only when the file says so")
        let ca = try BridgeConfiguration.parse(try SettingsTable.parse("cabinet: c1\nsite: s\nmqtt: {host: b, tls: {ca_file: /etc/coinmech/ca.pem}}\n", file: "b.yaml"))
        #expect(ca.mqtt.tls == MQTTTLS(caFile: "/etc/coinmech/ca.pem") && ca.mqtt.port == 8883)
        #expect(throws: SettingsError.self) { try BridgeConfiguration.parse(try SettingsTable.parse("cabinet: c1\nsite: s\nmqtt: {host: b, tls: maybe}\n", file: "b.yaml")) }
    }
}

/// `status` and `totals` as docs/FLEET.md gives them, from the daemon's own replies.
@Suite("Fleet bridge: status says why coins are returned; volatile fields alone never make a new one")
struct BridgeStatusTests {
    static let delivery = BridgeStatus.Delivery(guarantee: "end_to_end", ackedSeq: 1201, publishedSeq: 1215, lagSeconds: 0.94)

    static let daemon: JSON = [
        "source": ["kind": "serial", "device": "/dev/coinmech0", "state": "connected"], "inhibited": false,
        "plugin_inhibit": "link 'third-party' is quarantined: crashed 3 times within 60 s",
        "link_problems": [["link": "third-party", "state": "quarantined", "cause": "crashes", "reason": "crashed 3 times within 60 s", "since": 1795287001.2]],
        "pending": 0, "ledger": "ok", "chain_generation": 7, "plugin_errors": [], "plugin_lies": [], "last_seq": 1215, "version": "0.5.0",
        "counters": ["readings": 5], "uptime_s": 12.5,
    ]

    @Test("the example of docs/FLEET.md: a quarantined plugin inhibits, delivery lags 14 events")
    func example() {
        let status = BridgeStatus.payload(cabinet: "c-0042", site: "paris-nord", daemon: Self.daemon, unreachable: nil, teaching: false, unconfirmed: 1,
                                          delivery: Self.delivery, now: 1795290065.0)
        #expect(status.description == #"{"acceptor":null,"cabinet":"c-0042","chain_generation":7,"credit":[],"daemon":"connected","daemon_version":"0.5.0","delivery":{"acked_seq":1201,"guarantee":"end_to_end","lag_events":14,"lag_s":0.9,"published_seq":1215},"inhibited":false,"inhibited_by":["plugin"],"last_seq":1215,"ledger":"ok","link_problems":[{"cause":"crashes","link":"third-party","reason":"crashed 3 times within 60 s","since":1795287001.2,"state":"quarantined"}],"pending":0,"plugin_errors":[],"plugin_inhibit":"link 'third-party' is quarantined: crashed 3 times within 60 s","plugin_lies":[],"site":"paris-nord","source":{"device":"/dev/coinmech0","kind":"serial","state":"connected"},"time":1795290065.0,"unconfirmed":1,"v":1}"#)
    }

    @Test("every reason coins are returned, named; an unreachable daemon is one")
    func reasons() {
        var daemon = Self.daemon.object!
        daemon["inhibited"] = true
        daemon["ledger"] = "failing"
        daemon["source"] = ["kind": "cctalk", "device": "/dev/ttyUSB0", "state": "disconnected", "reason": "device removed"]
        daemon["acceptor"] = ["responding": false, "accepting": false, "fault": .null, "kind": "mdb", "held_for_payout": true, "tubes": ["USD5": 3]]
        let status = BridgeStatus.payload(cabinet: "c", site: "s", daemon: .object(daemon), unreachable: nil, teaching: true, unconfirmed: 0,
                                          delivery: Self.delivery, now: 1)
        #expect(status["inhibited_by"] == ["operator", "plugin", "ledger", "teaching", "source", "acceptor"])
        #expect(status["acceptor"]?["held_for_payout"] == true && status["acceptor"]?["tubes"] == nil, "the acceptor's at-a-glance part only")
        let gone = BridgeStatus.payload(cabinet: "c", site: "s", daemon: nil, unreachable: "coinmechd is not running", teaching: false, unconfirmed: 0,
                                        delivery: Self.delivery, now: 1)
        #expect(gone["daemon"] == "unreachable" && gone["inhibited_by"] == ["daemon"] && gone["daemon_reason"] == "coinmechd is not running")
    }

    @Test("pending, last_seq, the time and delivery's figures are volatile: alone they make no new status (B2)")
    func volatileFields() {
        var busier = Self.daemon.object!
        busier["pending"] = 3
        busier["last_seq"] = 1299
        let first = BridgeStatus.payload(cabinet: "c", site: "s", daemon: Self.daemon, unreachable: nil, teaching: false, unconfirmed: 1,
                                         delivery: Self.delivery, now: 1)
        let later = BridgeStatus.payload(cabinet: "c", site: "s", daemon: .object(busier), unreachable: nil, teaching: false, unconfirmed: 1,
                                         delivery: .init(guarantee: "end_to_end", ackedSeq: 1290, publishedSeq: 1299, lagSeconds: 3), now: 50)
        #expect(BridgeStatus.stable(first) == BridgeStatus.stable(later))
        let waiting = BridgeStatus.payload(cabinet: "c", site: "s", daemon: Self.daemon, unreachable: nil, teaching: false, unconfirmed: 2,
                                           delivery: Self.delivery, now: 1)
        #expect(BridgeStatus.stable(first) != BridgeStatus.stable(waiting), "an unconfirmed coin is news")
    }
}

/// `/metrics` made from the daemon's answers (docs/FLEET.md, "Metrics"): flags 0 or 1, one series
/// per state, the daemon's totals as they are.
@Suite("Fleet bridge metrics: every flag 0 or 1, one series per state, the daemon's counts as it keeps them")
struct BridgeMetricsTests {
    static func value(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") { return Double(line.split(separator: " ").last ?? "") }
        return nil
    }

    @Test("the example status: a quarantined link inhibits, the link's state one-hot, counters as the daemon has them, up")
    func fromStatus() {
        let chain: JSON = ["links": [["name": "third-party", "state": "quarantined", "statistics": ["calls": 9, "sampled_calls": 2, "mean_ns": 5000]]]]
        let totals: JSON = ["lifetime": [["currency": "USD", "denomination": "quarter", "count": 4, "value_minor": 100, "weight_g": 22.68]],
                            "lifetime_value": ["USD": 100], "current": [["currency": "USD", "denomination": "quarter", "count": 2, "value_minor": 50, "weight_g": 11.34]],
                            "current_value": ["USD": 50], "unconfirmed": [["currency": "USD", "denomination": "dime", "count": 1, "value_minor": 10, "weight_g": 2.268]]]
        var figures = BridgeFigures()
        figures.brokerConnected = true
        figures.eventsResent = ["broker_reconnect": 3]
        let bytes = BridgeMetrics.render(cabinet: "c-0042", site: "paris-nord", bridgeVersion: "0.6.0",
                                         daemon: .init(status: BridgeStatusTests.daemon, totals: totals, chain: chain, teaching: false, accepting: false), figures: figures,
                                         delivery: .init(guarantee: "waiting_for_ack", ackedSeq: 1201, publishedSeq: 1215, lagSeconds: 4))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(Self.value(text, "coinmech_up") == 1)
        #expect(Self.value(text, "coinmech_plugin_inhibit") == 1 && Self.value(text, "coinmech_accepting") == 0)
        #expect(Self.value(text, #"coinmech_link_state{link="third-party",state="quarantined"}"#) == 1)
        #expect(Self.value(text, #"coinmech_link_state{link="third-party",state="ok"}"#) == 0)
        #expect(Self.value(text, #"coinmech_link_mean_call_seconds{link="third-party"}"#) == 5000 / 1e9)
        #expect(Self.value(text, "coinmech_readings_total") == 5)
        #expect(Self.value(text, #"coinmech_coins_credited_total{currency="USD",denomination="quarter"}"#) == 4)
        #expect(Self.value(text, #"coinmech_cash_box_value_minor{currency="USD"}"#) == 50)
        #expect(Self.value(text, #"coinmech_unconfirmed_coins{currency="USD",denomination="dime"}"#) == 1)
        #expect(Self.value(text, "coinmech_bridge_lag_events") == 14, "last_seq 1215 − cursor 1201")
        #expect(Self.value(text, #"coinmech_bridge_delivery{guarantee="waiting_for_ack"}"#) == 1)
        #expect(Self.value(text, #"coinmech_bridge_delivery{guarantee="end_to_end"}"#) == 0)
        #expect(Self.value(text, #"coinmech_bridge_events_resent_total{cause="broker_reconnect"}"#) == 3)
        #expect(text.contains("# TYPE coinmech_coins_credited_total counter") && text.contains("# TYPE coinmech_up gauge"))
    }

    @Test("the customer's credit: the balance per currency from status.credit, sales, refunds and escrow returns counted once per seq, 0 before the first")
    func credit() {
        var daemon = BridgeStatusTests.daemon.object!
        daemon["credit"] = [["account": "mdb", "currency": "USD", "balance_minor": 150, "moved_seq": 9]]
        var figures = BridgeFigures()
        let moves: [JSON] = [["seq": 3, "kind": "credit_spent", "currency": "USD", "value_minor": 75], ["seq": 3, "kind": "credit_spent", "currency": "USD", "value_minor": 75],
                             ["seq": 4, "kind": "credit_refunded", "currency": "USD", "value_minor": 75], ["seq": 5, "kind": "credit_spent", "currency": "USD", "value_minor": 25],
                             ["seq": 6, "kind": "credit_returned", "currency": "USD", "value_minor": 50], ["seq": 7, "kind": "credit_opened", "currency": "EUR", "value_minor": 0]]
        for event in moves { figures.count(event) }
        let text = String(decoding: BridgeMetrics.render(cabinet: "c1", site: "s", bridgeVersion: "0.7.0", daemon: .init(status: .object(daemon)), figures: figures,
                                                         delivery: .init(guarantee: "end_to_end", ackedSeq: 0, publishedSeq: 0, lagSeconds: 0)), as: UTF8.self)
        #expect(Self.value(text, #"coinmech_credit_balance_minor{currency="USD"}"#) == 150)
        #expect(Self.value(text, #"coinmech_credit_sales_total{currency="USD"}"#) == 2, "seq 3 twice is one sale")
        #expect(Self.value(text, #"coinmech_credit_sales_value_minor_total{currency="USD"}"#) == 100)
        #expect(Self.value(text, #"coinmech_credit_refunds_total{currency="USD"}"#) == 1 && Self.value(text, #"coinmech_credit_refunds_value_minor_total{currency="USD"}"#) == 75)
        #expect(Self.value(text, #"coinmech_credit_returns_total{currency="USD"}"#) == 1 && Self.value(text, #"coinmech_credit_returns_value_minor_total{currency="USD"}"#) == 50)
        #expect(Self.value(text, #"coinmech_credit_expiries_total{currency="USD"}"#) == 0, "present before the first")
        #expect(text.contains("# TYPE coinmech_credit_sales_total counter") && text.contains("# TYPE coinmech_credit_balance_minor gauge"))
        let status = BridgeStatus.payload(cabinet: "c", site: "s", daemon: .object(daemon), unreachable: nil, teaching: false, unconfirmed: 0,
                                          delivery: BridgeStatusTests.delivery, now: 1)
        #expect(status["credit"]?.array?.first?["balance_minor"] == 150)
        var spent = daemon
        spent["credit"] = [["account": "mdb", "currency": "USD", "balance_minor": 75, "moved_seq": 10]]
        let after = BridgeStatus.payload(cabinet: "c", site: "s", daemon: .object(spent), unreachable: nil, teaching: false, unconfirmed: 0,
                                         delivery: BridgeStatusTests.delivery, now: 1)
        #expect(BridgeStatus.stable(status) != BridgeStatus.stable(after), "a balance is news")
        #expect(BridgeStatus.statusEvents.isSuperset(of: ["credit_opened", "credit_spent", "credit_refunded", "credit_returned", "credit_expired"]))
    }

    @Test("a daemon that did not answer: up is 0 and nothing of the daemon is made up")
    func unreachable() {
        let text = String(decoding: BridgeMetrics.render(cabinet: "c1", site: "s", bridgeVersion: "0.6.0", daemon: .init(), figures: BridgeFigures(),
                                                         delivery: .init(guarantee: "end_to_end", ackedSeq: 0, publishedSeq: 0, lagSeconds: 0)), as: UTF8.self)
        #expect(Self.value(text, "coinmech_up") == 0)
        #expect(!text.contains("coinmech_inhibited") && !text.contains("coinmech_coins_credited_total{"))
    }
}
