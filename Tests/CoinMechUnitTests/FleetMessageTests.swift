import CoinMechFleet
import CoinMechSettings
import CoinMechModel
import CoinMechSupport
import Testing

/// What the fleet reads from a cabinet's topics (docs/FLEET.md F1–F3), with the contract's own
/// example payloads, and its configuration's errors.
@Suite("Fleet messages: the contract's payloads read; unknown versions, wrong cabinets and bad seqs refused")
struct FleetMessageTests {
    static let prefix = "coinmech/v1/"
    static func read(_ topic: String, _ payload: String) throws(FleetMessage.Refusal) -> FleetMessage? {
        try FleetMessage.read(topic: prefix + topic, payload: Array(payload.utf8), prefix: prefix)
    }

    @Test("FLEET.md's coin event is read with its identity, kind and time; seq 1 and 0-valued fields are numbers, not booleans")
    func event() throws {
        let message = try Self.read("paris-nord/c-0042/event", #"""
            {"v":1,"cabinet":"c-0042","site":"paris-nord","seq":1,"published":1795290000.512,
             "event":{"seq":1,"time":1795290000.431,"kind":"coin","source":"serial","epoch":3,"device_seq":1,"currency":"EUR","denomination":"EUR_2",
                      "value_minor":200,"link":"eur","chain_generation":0,"ref_seq":0,"message":"stored"}}
            """#)
        guard case .event(let event)? = message else { Issue.record("not an event: \(String(describing: message))"); return }
        #expect(event.cabinet == "c-0042" && event.site == "paris-nord" && event.seq == 1 && event.kind == "coin")
        #expect(event.time == 1795290000.431 && event.published == 1795290000.512)
        #expect(event.json.contains(#""value_minor":200"#) && event.json.contains(#""chain_generation":0"#))
    }

    @Test("refused: a version not v1 (F1), a payload naming another cabinet (F3), no seq, event.seq differing, not JSON")
    func refusals() {
        let cases: [(String, String, String)] = [
            ("s/c-1/event", #"{"v":2,"cabinet":"c-1","seq":1,"event":{"seq":1,"kind":"coin","time":1}}"#, "contract version 2"),
            ("s/c-1/event", #"{"v":1,"cabinet":"c-2","seq":1,"event":{"seq":1,"kind":"coin","time":1}}"#, #"names cabinet "c-2""#),
            ("s/c-1/event", #"{"v":1,"cabinet":"c-1","event":{"seq":1,"kind":"coin","time":1}}"#, "no seq"),
            ("s/c-1/event", #"{"v":1,"cabinet":"c-1","seq":true,"event":{"seq":1,"kind":"coin","time":1}}"#, "no seq"),
            ("s/c-1/event", #"{"v":1,"cabinet":"c-1","seq":2,"event":{"seq":1,"kind":"coin","time":1}}"#, "differs"),
            ("s/c-1/state", "not json", "not a JSON object"),
            ("s/c-1/event", #"{"v":1,"cabinet":"c-1","seq":1,"event":{"seq":1,"kind":"coin","time":1,"value_minor":200.5}}"#, "not a whole number"),
            ("s/c-1/status", #"{"v":1,"cabinet":"c-1","daemon_reason":"a\u0000b"}"#, "NUL"),
        ]
        for (topic, payload, reason) in cases {
            #expect(throws: FleetMessage.Refusal.self) { try Self.read(topic, payload) }
            do { _ = try Self.read(topic, payload) } catch { #expect(error.reason.contains(reason), "\(error.reason)") }
        }
    }

    @Test("seqs beyond the contract's range (2^53 and up, Int64.max) are refused, in an event and in a reply's missing ranges; 2^53 − 1 is the last one taken")
    func seqRange() throws {
        func event(_ seq: String) -> String { #"{"v":1,"cabinet":"c-1","seq":\#(seq),"event":{"seq":\#(seq),"kind":"decision","time":1}}"# }
        for seq in ["9007199254740992", "9007199254740993", "9223372036854775807"] {
            do {
                _ = try Self.read("s/c-1/event", event(seq))
                Issue.record("seq \(seq) taken")
            } catch {
                #expect(error.reason.contains("beyond the contract's range"), "\(error.reason)")
            }
        }
        guard case .event(let last)? = try Self.read("s/c-1/event", event("9007199254740991")) else { Issue.record("2^53 − 1 refused"); return }
        #expect(last.seq == FleetLimits.maxSeq)
        let reply = #"{"v":1,"cabinet":"c-1","id":"g","cmd":"resend","ok":true,"result":{"missing":[[1,9223372036854775806]]}}"#
        #expect(throws: FleetMessage.Refusal.self) { try Self.read("s/c-1/reply/g", reply) }
    }

    @Test("a coin's value_minor is one coin's worth (0 … 10,000,000); a collection's rows are sums below 2^53")
    func valueRange() throws {
        func coin(_ value: String) -> String { #"{"v":1,"cabinet":"c-1","seq":1,"event":{"seq":1,"kind":"coin","time":1,"value_minor":\#(value)}}"# }
        for value in ["-1", "10000001", "9000000000000000000"] {
            do {
                _ = try Self.read("s/c-1/event", coin(value))
                Issue.record("value_minor \(value) taken")
            } catch {
                #expect(error.reason.contains("not one coin's value"), "\(error.reason)")
            }
        }
        #expect(try Self.read("s/c-1/event", coin("10000000")) != nil)
        #expect(try Self.read("s/c-1/event", coin("0")) != nil)
        let collect = #"{"v":1,"cabinet":"c-1","seq":2,"event":{"seq":2,"kind":"collect","time":1,"collected":[{"currency":"USD","value_minor":"lots"}]}}"#
        #expect(throws: FleetMessage.Refusal.self) { try Self.read("s/c-1/event", collect) }
    }

    @Test("each refusal says its kind; a payload over the cap is refused unread; a topic whose levels are no ids, or a reply whose id is not its topic's, is malformed")
    func kinds() {
        let event = #"{"v":1,"cabinet":"c-1","seq":1,"event":{"seq":1,"kind":"coin","time":1}}"#
        let cases: [(String, String, Int, FleetMessage.Refusal.Kind)] = [
            ("s/c-1/event", event, 30, .tooLarge),
            ("s/C-1/event", event, .max, .malformed),
            ("s/c-1\n/event", event, .max, .malformed),
            ("s/c-1/event", #"{"v":2,"cabinet":"c-1"}"#, .max, .version),
            ("s/c-1/event", #"{"v":1,"cabinet":"c-2"}"#, .max, .wrongCabinet),
            ("s/c-1/event", "[[[[", .max, .malformed),
            ("s/c-1/reply/a", #"{"v":1,"cabinet":"c-1","id":"b","cmd":"status","ok":true}"#, .max, .malformed),
        ]
        for (topic, payload, limit, kind) in cases {
            do {
                _ = try FleetMessage.read(topic: Self.prefix + topic, payload: Array(payload.utf8), prefix: Self.prefix, maxBytes: limit)
                Issue.record("taken: \(topic) \(payload)")
            } catch {
                #expect(error.kind == kind, "\(topic): \(error.kind) \(error.reason)")
                #expect(error.cabinet == (topic.hasPrefix("s/c-1/") ? "c-1" : nil))
            }
        }
        #expect(FleetMessage.cabinet(in: Self.prefix + "s/c-1/event", prefix: Self.prefix) == "c-1")
        #expect(FleetMessage.cabinet(in: Self.prefix + "s/coinmech-fleet/event", prefix: Self.prefix) == nil)
        #expect(FleetMessage.cabinet(in: Self.prefix + "s/Bad Id/event", prefix: Self.prefix) == nil)
        // A payload nested past what a decoder takes is refused, never a crash.
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: FleetMessage.Refusal.self) { try Self.read("s/c-1/event", deep) }
    }

    @Test("a log line cannot be forged or flooded from outside: control characters escaped, quotes escaped, the text cut")
    func logText() {
        #expect(LogText.quoted("alice") == #""alice""#)
        #expect(LogText.quoted("a\nb\"c\\d\u{1b}[31m\u{202e}") == #""a\nb\"c\\d\u{1b}[31m\u{202e}""#)
        #expect(LogText.quoted(String(repeating: "x", count: 1000), limit: 5) == #""xxxxx…""#)
    }

    @Test("the fleet's own users' topics, acks, commands and empty retained payloads are no cabinet's message")
    func ignored() throws {
        #expect(try Self.read("s/coinmech-fleet/event", #"{"v":1,"cabinet":"coinmech-fleet","seq":1}"#) == nil)
        #expect(try Self.read("s/c-1/ack", #"{"v":1,"cabinet":"c-1","seq":1}"#) == nil)
        #expect(try Self.read("s/c-1/cmd/resend", #"{"v":1,"id":"x"}"#) == nil)
        #expect(try Self.read("s/c-1/state", "") == nil)
        #expect(try FleetMessage.read(topic: "other/s/c-1/event", payload: [], prefix: Self.prefix) == nil)
    }

    @Test("the last will (no time) and a resend's reply with missing ranges")
    func willAndReply() throws {
        guard case .state(let will)? = try Self.read("paris-nord/c-0042/state", #"{"v":1,"cabinet":"c-0042","site":"paris-nord","state":"offline","reason":"lost","bridge_version":"0.6.0","daemon_version":null}"#) else {
            Issue.record("no state"); return
        }
        #expect(!will.online && will.reason == "lost" && will.time == nil && will.heartbeat == nil)
        guard case .state(let online)? = try Self.read("paris-nord/c-0042/state", #"{"v":1,"cabinet":"c-0042","site":"paris-nord","state":"online","time":1795289001.2,"heartbeat_s":60,"bridge_version":"0.7.0","daemon_version":null}"#) else {
            Issue.record("no state"); return
        }
        #expect(online.online && online.heartbeat == 60 && online.time == 1795289001.2)
        guard case .reply(let reply)? = try Self.read("paris-nord/c-0042/reply/gap-c-0042-901",
            #"{"v":1,"cabinet":"c-0042","site":"paris-nord","id":"gap-c-0042-901","cmd":"resend","time":1.0,"ok":true,"result":{"from":901,"to":950,"resent":48,"missing":[[905,905],[940,941]]}}"#) else {
            Issue.record("no reply"); return
        }
        #expect(reply.ok && reply.command == "resend" && reply.missing == [905...905, 940...941])
    }

    @Test("the configuration: defaults, opening hours, and errors that name the key")
    func configuration() throws {
        let c = try FleetConfiguration.parse(try SettingsTable.parse("mqtt: {host: broker}\nalerts: {opening_hours: '07:00-22:30'}\n", file: "fleet.yaml"))
        #expect(c.mqtt.port == 8883 && c.mqtt.tls != nil && c.mqtt.prefix == "coinmech/v1/" && c.mqtt.clientID == "coinmech-fleet")
        #expect(c.database.socketDirectory == "/run/postgresql" && c.ingest.gapGraceSeconds == 30)
        #expect(c.alerts.openingHours == 420..<1350)
        #expect(c.subscriptions.first == "coinmech/v1/+/+/event" && c.subscriptions.count == 5)
        let partition = try FleetConfiguration.parse(try SettingsTable.parse("mqtt: {host: broker, sites: [paris-nord, lyon]}\n", file: "fleet.yaml"))
        #expect(partition.subscriptions.contains("coinmech/v1/lyon/+/reply/+") && partition.subscriptions.count == 10)
        let bad: [(String, String)] = [
            ("database: {}", "mqtt"),
            ("mqtt: {host: b, prefix: 'a/+/'}", "prefix"),
            ("mqtt: {host: b}\nalerts: {opening_hours: '22:00-07:00'}", "opening_hours"),
            ("mqtt: {host: b}\ndatabase: {socket_dir: /run/postgresql, host: db}", "host"),
            ("mqtt: {host: b}\nhttp: {listen: nowhere}", "listen"),
            ("mqtt: {host: b}\nbogus: 1", "bogus"),
            ("mqtt: {host: b, sites: ['a/b']}", "sites"),
        ]
        for (text, key) in bad {
            do {
                _ = try FleetConfiguration.parse(try SettingsTable.parse(text, file: "fleet.yaml"))
                Issue.record("accepted: \(text)")
            } catch {
                #expect("\(error)".contains(key), "\(error)")
            }
        }
    }
}

@Suite("Fleet alerts: each rule from a cabinet's facts")
struct AlertRulesTests {
    static func facts(_ change: (inout AlertRules.Facts) -> Void = { _ in }) -> AlertRules.Facts {
        var f = AlertRules.Facts(cabinet: "c-1", online: true, stateSince: 0, firstSeen: 0, lastCredit: 1000, mechStatus: nil, ledgerFailing: false,
                                 quarantinedLinks: [], unconfirmed: 0, acceptorLostEvents: 0, hole: nil, holeSince: nil)
        change(&f)
        return f
    }

    static func kinds(_ f: AlertRules.Facts, now: Double = 2000, _ settings: FleetConfiguration.Alerts = .init()) -> [String] {
        AlertRules.evaluate(f, now: now, settings, gapGrace: 30).map(\.kind)
    }

    @Test("a healthy cabinet raises nothing; each fact raises its own kind")
    func rules() {
        #expect(Self.kinds(Self.facts()).isEmpty)
        #expect(Self.kinds(Self.facts { $0.online = false; $0.stateSince = 1000 }) == ["offline"], "1000 s offline, past 600")
        #expect(Self.kinds(Self.facts { $0.online = false; $0.stateSince = 1500 }).isEmpty, "500 s offline")
        #expect(Self.kinds(Self.facts { $0.mechStatus = "JAM" }) == ["jam"])
        #expect(Self.kinds(Self.facts { $0.mechStatus = "TAMPER" }) == ["tamper"])
        #expect(Self.kinds(Self.facts { $0.mechStatus = "OK" }).isEmpty)
        #expect(Self.kinds(Self.facts { $0.ledgerFailing = true }) == ["ledger_failing"])
        #expect(Self.kinds(Self.facts { $0.quarantinedLinks = ["third-party"] }) == ["plugin_quarantined"])
        #expect(Self.kinds(Self.facts { $0.unconfirmed = 2 }) == ["unconfirmed_coins"])
        #expect(Self.kinds(Self.facts { $0.acceptorLostEvents = 1 }) == ["acceptor_lost_events"])
        #expect(Self.kinds(Self.facts { $0.hole = 5...7; $0.holeSince = 1980 }).isEmpty, "inside the gap's grace")
        #expect(Self.kinds(Self.facts { $0.hole = 5...7; $0.holeSince = 1960 }) == ["seq_gap"])
    }

    @Test("a cabinet whose state says online but whose bridge broke its heartbeat is off line once the silence passes offline_after_s")
    func silence() {
        let overdue = { (listened: Double) in CabinetHearing.Silence(since: 1000, listenedFor: listened, allowed: 130) }
        #expect(Self.kinds(Self.facts { $0.silence = overdue(730) }) == ["offline"], "600 s past the promise")
        #expect(Self.kinds(Self.facts { $0.silence = overdue(729) }).isEmpty, "599 s past the promise")
        #expect(Self.kinds(Self.facts { $0.silence = nil; $0.lastCredit = 999_000 }, now: 1_000_000).isEmpty, "no promise made: never silent")
        // Off line by its will: the will's own clock rules, not the silence.
        #expect(Self.kinds(Self.facts { $0.online = false; $0.stateSince = 1500; $0.silence = overdue(5000) }).isEmpty)
        let detail = AlertRules.evaluate(Self.facts { $0.silence = overdue(730) }, now: 2000, .init(), gapGrace: 30).first?.detail ?? ""
        #expect(detail.hasPrefix("silent for 12 min of listening"), "\(detail)")
    }

    @Test("hearing: silence counts only the fleet's listening, across its restarts; retained messages are not the cabinet speaking; no promise, no silence")
    func hearing() {
        // Wall clock 1,000,000 s ahead of the monotonic one here; a step of it must not count.
        let t = { (seconds: Double) in Instant(nanoseconds: UInt64(seconds * 1e9)) }
        let at = { (monotonic: Double) in CabinetHearing.Moment(wall: 1_000_000 + monotonic, monotonic: t(monotonic)) }
        var hearing = CabinetHearing()
        hearing.connected(at: t(100))
        hearing.promised("c-1", heartbeat: 5, at: at(100))
        #expect(hearing.silence(of: "c-1", asOf: t(104)) == .init(since: 1_000_100, listenedFor: 4, allowed: 10), "never heard live: counted from the promise")
        #expect(hearing.silence(of: "c-2", asOf: t(104)) == nil, "no promise")
        hearing.heard("c-1", retained: false, at: at(150))
        hearing.heard("c-1", retained: true, at: at(160))
        #expect(hearing.silence(of: "c-1", asOf: t(170)) == .init(since: 1_000_150, listenedFor: 20, allowed: 10), "the retained copy at 160 is the broker's memory")
        // The fleet loses the broker for 100 s: that time is nobody's silence.
        hearing.disconnected(at: t(180))
        hearing.connected(at: t(280))
        #expect(hearing.silence(of: "c-1", asOf: t(290))?.listenedFor == 40)
        // The fleet is killed at 290 after saving; a new run (a new monotonic origin) starts from what was saved.
        let saved = hearing.unsaved
        #expect(saved == ["c-1": .init(at: 1_000_150, listened: 50)])
        var restarted = CabinetHearing(listened: hearing.listened(at: t(290)), heard: saved)
        restarted.connected(at: t(7))
        restarted.promised("c-1", heartbeat: 5, at: at(7))
        #expect(restarted.silence(of: "c-1", asOf: t(17)) == .init(since: 1_000_150, listenedFor: 50, allowed: 10), "the silence before the restart still counts")
        restarted.promised("c-1", heartbeat: nil, at: at(17))
        #expect(restarted.silence(of: "c-1", asOf: t(27)) == nil, "a bridge without heartbeat_s")
        hearing.saved()
        #expect(hearing.unsaved.isEmpty)
    }

    @Test("no credit for the set time raises an alert only inside the opening hours")
    func noCredit() {
        var settings = FleetConfiguration.Alerts()
        settings.noCreditSeconds = 3600
        let quiet = Self.facts { $0.lastCredit = 0 }
        // 1970-01-01 03:00 UTC and 12:00 UTC.
        #expect(Self.kinds(quiet, now: 3 * 3600, settings) == ["no_credit"])
        settings.openingHours = 8 * 60..<20 * 60
        #expect(Self.kinds(quiet, now: 3 * 3600, settings).isEmpty, "closed at 03:00")
        #expect(Self.kinds(quiet, now: 12 * 3600, settings) == ["no_credit"])
        settings.timeZone = "Asia/Tokyo"
        #expect(Self.kinds(quiet, now: 12 * 3600, settings).isEmpty, "21:00 in Tokyo")
    }
}
