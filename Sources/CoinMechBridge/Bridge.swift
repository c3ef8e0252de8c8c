import CoinMechClient
import CoinMechProtocol
import CoinMechSupport
import Foundation
import CoinMechMQTT
import Synchronization

/// `coinmech-bridge`: one cabinet's daemon, read over its socket like any client, published to
/// the fleet's broker (docs/FLEET.md). Every ledger event goes to `event` in seq order, again
/// after the consumer's cursor whenever the broker may have lost it; the cursor is the
/// consumer's `ack`, kept in `cursor.json`; `state` says `online`, and the last will `offline`.
///
/// One thread runs it (`run` blocks until `stop`); libmosquitto's own thread talks to the broker.
public final class Bridge: Sendable {
    public static let version = "0.7.0"

    public let configuration: BridgeConfiguration
    let log: @Sendable (Level, String) -> Void
    /// `/metrics`, served by its owner (the service group) and fed at each poll here.
    let metrics: MetricsServer?
    private let stopping = Atomic<Bool>(false)

    public enum Level: Sendable { case info, notice, warning, error }

    public init(configuration: BridgeConfiguration, metrics: MetricsServer? = nil, log: @escaping @Sendable (Level, String) -> Void) {
        self.configuration = configuration
        self.metrics = metrics
        self.log = log
    }

    public func stop() { stopping.store(true, ordering: .relaxed) }

    static func now() -> Double { Date().timeIntervalSince1970 }

    public func run() throws(BridgeError) {
        let c = configuration
        do {
            try FileManager.default.createDirectory(atPath: c.stateDirectory, withIntermediateDirectories: true)
        } catch {
            throw .cursor(path: c.stateDirectory, "cannot create the state directory: \(error.localizedDescription)")
        }
        let cursorFile = BridgeCursor(directory: c.stateDirectory, cabinet: c.cabinet)
        let (saved, warning) = cursorFile.read()
        if let warning { log(.warning, warning) }
        var delivery = BridgeDelivery(cursor: saved, window: c.delivery.window, maxInflight: c.mqtt.maxInflight, acksRequired: c.delivery.acksRequired,
                                      ackTimeout: c.delivery.ackTimeoutSeconds, now: Self.now())
        if c.mqtt.tls == nil { log(.warning, MQTTTLS.plaintextWarning) }
        if !c.delivery.acksRequired {
            log(.warning, "delivery.acks is off: the cursor follows the broker's PUBACK, so a broker crash can lose events (at most once)")
        }
        let password = try c.mqtt.passwordFile.map { file throws(BridgeError) in
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw .mqtt("cannot read mqtt.password_file \(file)") }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var daemonHello: JSON?
        let link: MQTTLink
        do {
            link = try MQTTLink(.init(clientID: c.mqtt.clientID, host: c.mqtt.host, port: c.mqtt.port, keepalive: c.mqtt.keepaliveSeconds,
                                      maxInflight: c.mqtt.maxInflight, username: c.mqtt.username, password: password,
                                      will: (c.topic("state"), state("offline", reason: "lost", hello: nil, timed: false)),
                                      subscriptions: [c.topic("ack"), c.topic("cmd/+")], tls: c.mqtt.tls))
        } catch { throw .mqtt(error.message) }
        // A key or a password others can read is a cabinet others can be: said, not refused.
        for (key, path) in [("mqtt.password_file", c.mqtt.passwordFile), ("mqtt.tls.key_file", c.mqtt.tls?.keyFile)] {
            if let path, let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int, mode & 0o077 != 0 {
                log(.warning, "\(key) \(path) is readable by others (mode \(String(mode, radix: 8))): make it readable by the bridge's user alone (chmod 600)")
            }
        }
        link.start()
        log(.notice, "publishing cabinet \(c.cabinet) of site \(c.site) to \(c.mqtt.host):\(c.mqtt.port) under \(c.mqtt.prefix); cursor \(saved)")
        var connected = false
        var daemon: CoinMechConnection?
        /// Events read and not yet published: holes read from the ledger, then the live event
        /// that showed them, published as the window allows (B4, B6).
        var queued: [(seq: Int64, event: JSON)] = []
        var daemonProblem: String?
        var reporter = Reporter()
        var ledgerBehind = false
        var written = saved
        var lastWrite = 0.0
        var ledgerBehindSaid = 0.0
        var commands = makeCommands()
        /// The broker connection this loop has rewound for; PUBACKs of earlier ones are stale.
        var generation = -1

        while !stopping.load(ordering: .relaxed) {
            let now = Self.now()
            for incoming in link.take() {
                switch incoming {
                case .connected(let code, let accepted):
                    guard code == 0 else {
                        log(.error, "the broker \(c.mqtt.host):\(c.mqtt.port) refused the connection (\(MQTTLink.refusal(code)), code \(code)): check mqtt.username, the password or certificate, and the broker's ACLs; trying again")
                        continue
                    }
                    connected = true
                    reporter.figures.brokerConnected = true
                    reporter.figures.brokerConnects += 1
                    delivery.brokerConnected(now: now)
                    commands.job?.brokerLost()
                    generation = accepted
                    link.admit(accepted)
                    reporter.connected()
                    _ = link.publish(c.topic("state"), state("online", reason: nil, hello: daemonHello, timed: true), retain: true)
                    log(.notice, "connected to the broker; publishing again after the cursor \(delivery.cursor)")
                case .disconnected(let code):
                    connected = false
                    reporter.figures.brokerConnected = false
                    if code != 0 { log(.warning, "lost the broker (code \(code)); reconnecting") }
                case .published(let mid, let on):
                    guard on == generation else { continue }
                    if commands.job?.puback(mid) == true { continue }
                    let before = delivery.cursor
                    delivery.puback(mid, now: now)
                    if delivery.cursor != before { reporter.figures.lastAckTime = now }
                    reporter.acked(through: delivery.cursor)
                case .message(let topic, let payload, let retained):
                    if topic.hasPrefix(c.topic("cmd/")) {
                        received(command: topic, payload, retained: retained, &commands, link, now: now)
                        continue
                    }
                    guard topic == c.topic("ack") else { continue }
                    if take(ack: payload, &delivery, now: now) { reporter.figures.lastAckTime = now }
                    reporter.acked(through: delivery.cursor)
                case .connectFailed(let why):
                    log(.warning, "cannot reach the broker at \(c.mqtt.host):\(c.mqtt.port): \(why); trying again")
                case .oversized(let topic, let bytes):
                    log(.warning, "a message of \(bytes) bytes on \(LogText.quoted(topic, limit: 120)) dropped unread: neither an ack nor a command is that long")
                case .reading:
                    break
                }
            }
            if delivery.cursor != written, now - lastWrite >= 1 {
                do throws(BridgeError) {
                    try cursorFile.write(delivery.cursor, time: now)
                    written = delivery.cursor
                } catch {
                    log(.error, "\(error)")
                }
                lastWrite = now
            }
            // Polled with the broker away too: `/metrics` says so, and status is ready for its return.
            report(&reporter, delivery, commands, ledgerBehind: ledgerBehind, link, metrics, now: now)
            guard connected else {
                usleep(20_000)
                continue
            }
            runCommands(&commands, liveInFlight: delivery.inFlightCount, link, now: now)
            if delivery.tick(now: now) {
                log(.warning, "no ack moved the cursor for \(Int(delivery.ackWait / 2)) s: publishing again after seq \(delivery.cursor) (rewind \(delivery.rewinds))")
            }
            if delivery.subscribeFrom != nil {
                daemon = nil
                reporter.figures.daemonConnected = false
                queued.removeAll()
            }
            if daemon == nil {
                do throws(ClientError) {
                    let connection = try CoinMechConnection(path: c.socketPath)
                    let last = connection.hello["seq"]?.int ?? 0
                    ledgerBehind = delivery.cursor > last
                    guard delivery.cursor <= last else {
                        // B9: the fleet acked seqs this ledger does not have.
                        if now - ledgerBehindSaid >= 60 {
                            log(.error, "the fleet acked seq \(delivery.cursor) but the daemon's ledger ends at \(last): it was replaced or restored; publishing nothing until an operator resolves it")
                            ledgerBehindSaid = now
                        }
                        usleep(500_000)
                        continue
                    }
                    let since = delivery.subscribeFrom ?? delivery.published
                    try connection.request(.subscribe(since: since, pending: true))
                    delivery.subscribed()
                    if daemonHello?["version"] != connection.hello["version"] {
                        daemonHello = connection.hello
                        _ = link.publish(c.topic("state"), state("online", reason: nil, hello: daemonHello, timed: true), retain: true)
                    }
                    daemon = connection
                    reporter.figures.daemonConnected = true
                    reporter.figures.daemonConnects += 1
                    if daemonProblem != nil { log(.notice, "reading the daemon again") }
                    daemonProblem = nil
                } catch {
                    if daemonProblem != "\(error)" { log(.warning, "cannot read the daemon: \(error); trying again") }
                    daemonProblem = "\(error)"
                    usleep(200_000)
                    continue
                }
            }
            guard delivery.canPublish, delivery.inFlightCount + commands.inFlight < c.mqtt.maxInflight, let connection = daemon else {
                usleep(5_000)
                continue
            }
            if !queued.isEmpty {
                let (seq, event) = queued.removeFirst()
                send(ifDue: seq, event, &delivery, &reporter.figures, link, now: now)
                continue
            }
            do throws(ClientError) {
                guard let message = try connection.nextEvent(timeout: 0.05) else { continue }
                guard message["type"] == "event", let seq = message["seq"]?.int, let event = message["event"] else {
                    // Overflow: the daemon cut the subscription off; it goes on after what was published.
                    log(.warning, "the daemon cut the subscription off (\(message["type"]?.string ?? "?")): subscribing again after seq \(delivery.published)")
                    daemon = nil
                    reporter.figures.daemonConnected = false
                    delivery.daemonLost()
                    continue
                }
                reporter.saw(event)
                switch delivery.take(seq, now: now) {
                case .duplicate:
                    break
                case .publish:
                    send(seq, event, &delivery, &reporter.figures, link)
                case .gap(let from, let to):
                    log(.warning, "seqs \(from)…\(to) did not come on the subscription: reading them from the ledger")
                    queued = try read(from: from, to: to, connection) + [(seq, event)]
                }
            } catch {
                log(.warning, "lost the daemon (\(error)); subscribing again after seq \(delivery.published)")
                daemon = nil
                reporter.figures.daemonConnected = false
                queued.removeAll()
                delivery.daemonLost()
                usleep(100_000)
            }
        }
        // The cursor first: a stop that takes long below must not lose it.
        if delivery.cursor != written { try cursorFile.write(delivery.cursor, time: Self.now()) }
        // A clean stop: `offline` said (and PUBACKed, briefly waited for), the cursor saved.
        if connected, let mid = link.publish(c.topic("state"), state("offline", reason: "stopped", hello: daemonHello, timed: true), retain: true) {
            let deadline = Self.now() + 2
            waiting: while Self.now() < deadline {
                for incoming in link.take() {
                    switch incoming {
                    case .published(mid, generation): break waiting
                    case .message(let topic, let payload, _) where topic == c.topic("ack"): take(ack: payload, &delivery, now: Self.now())
                    default: break
                    }
                }
                usleep(10_000)
            }
        }
        link.stop()
        if delivery.cursor != written { try cursorFile.write(delivery.cursor, time: Self.now()) }
        log(.notice, "stopped; cursor \(delivery.cursor)")
    }

    /// What `status` and `totals` need between turns of the loop.
    struct Reporter {
        var poller: CoinMechConnection?
        var nextPoll = 0.0
        var statusSoon = true
        var totalsSoon = true
        var lastStable: JSON?
        var lastPublished = 0.0
        var lastTotals = 0.0
        var unconfirmed: Int64 = 0
        /// When each published, unacked event was recorded: `lag_s`.
        var unackedTimes: [Int64: Double] = [:]
        var highestSeen: Int64 = 0
        /// The bridge's own counts, and the daemon's last answers, for `/metrics`.
        var figures = BridgeFigures()
        var answers = BridgeMetrics.Daemon()

        /// A broker connection: both go out again (they are retained, and the broker may have lost them).
        mutating func connected() {
            statusSoon = true
            totalsSoon = true
            lastStable = nil
        }

        mutating func saw(_ event: JSON) {
            guard let kind = event["kind"]?.string else { return }
            if let seq = event["seq"]?.int {
                highestSeen = max(highestSeen, seq)
                unackedTimes[seq] = event["time"]?.double
            }
            if BridgeStatus.statusEvents.contains(kind) { statusSoon = true }
            if BridgeStatus.totalsEvents.contains(kind) { totalsSoon = true }
        }

        mutating func acked(through cursor: Int64) {
            unackedTimes = unackedTimes.filter { $0.key > cursor }
        }
    }

    /// `status` when it changed (or is due for a refresh), `totals` after money moved: read on
    /// a connection of their own, so the event stream is never held up by them.
    private func report(_ reporter: inout Reporter, _ delivery: BridgeDelivery, _ commands: Commands, ledgerBehind: Bool, _ link: MQTTLink,
                        _ metrics: MetricsServer?, now: Double) {
        let c = configuration
        let statusDue = reporter.statusSoon || now >= reporter.nextPoll
        let totalsDue = reporter.totalsSoon && now - reporter.lastTotals >= c.totalsMinimumInterval
        guard statusDue || totalsDue else { return }
        var unreachable: String?
        var status: JSON?
        var teaching = false
        do throws(ClientError) {
            let poller: CoinMechConnection
            if let open = reporter.poller { poller = open } else { poller = try CoinMechConnection(path: c.socketPath) }
            reporter.poller = poller
            // One `totals` serves the retained topic, status's unconfirmed count and /metrics.
            let totals = try poller.request(.totals)
            reporter.unconfirmed = BridgeStatus.unconfirmed(totals)
            if totalsDue {
                _ = link.publish(c.topic("totals"), BridgeStatus.totals(cabinet: c.cabinet, site: c.site, totals: totals,
                                                                        asOfSeq: reporter.highestSeen, now: now).description, retain: true)
                reporter.totalsSoon = false
                reporter.lastTotals = now
            }
            if statusDue {
                status = try poller.request(.status)
                teaching = (try poller.request(.teachStatus))["teaching"]?.bool ?? false
                reporter.answers = .init(status: status, totals: totals, chain: try poller.request(.chain), teaching: teaching)
            }
        } catch {
            reporter.poller = nil
            unreachable = "\(error)"
            if statusDue { reporter.answers = .init() }
        }
        guard statusDue else { return }
        reporter.statusSoon = false
        reporter.nextPoll = now + c.statusPollSeconds
        let guarantee = !delivery.acksRequired ? "at_most_once" : ledgerBehind ? "ledger_behind"
            : delivery.waitingForAck(now: now) ? "waiting_for_ack" : "end_to_end"
        let oldest = reporter.unackedTimes[delivery.cursor + 1].map { max(now - $0, 0) } ?? 0
        let payload = BridgeStatus.payload(cabinet: c.cabinet, site: c.site, daemon: status, unreachable: unreachable, teaching: teaching,
                                           unconfirmed: reporter.unconfirmed,
                                           delivery: .init(guarantee: guarantee, ackedSeq: delivery.cursor, publishedSeq: delivery.published, lagSeconds: oldest),
                                           now: now)
        if let metrics {
            var answers = reporter.answers
            if answers.status != nil { answers.accepting = (payload["inhibited_by"]?.array ?? []).isEmpty }
            var figures = reporter.figures
            figures.eventsPublished = delivery.copiesSent + commands.resendCopies
            figures.eventsResent = delivery.resent
            figures.eventsResent["resend"] = commands.resendCopies
            figures.commands = commands.answered
            figures.inFlight = delivery.inFlightCount + commands.inFlight
            metrics.publish(BridgeMetrics.render(cabinet: c.cabinet, site: c.site, bridgeVersion: Self.version, daemon: answers, figures: figures,
                                                 delivery: .init(guarantee: guarantee, ackedSeq: delivery.cursor, publishedSeq: delivery.published, lagSeconds: oldest)))
        }
        let stable = BridgeStatus.stable(payload)
        guard stable != reporter.lastStable || now - reporter.lastPublished >= c.statusRefreshSeconds else { return }
        if link.publish(c.topic("status"), payload.description, retain: true) != nil {
            reporter.lastStable = stable
            reporter.lastPublished = now
        }
    }

    /// Seqs `from`…`to` from the ledger, in pages (B4). One the ledger does not have comes back
    /// as `.null`: it is stepped past when its turn comes, and said.
    private func read(from: Int64, to: Int64, _ connection: CoinMechConnection) throws(ClientError) -> [(seq: Int64, event: JSON)] {
        var found: [Int64: JSON] = [:]
        var since = from - 1
        while since < to {
            let page = try connection.request(.events(since: since, limit: min(to - since, 1000)))["events"]?.array ?? []
            for event in page { if let seq = event["seq"]?.int, seq <= to { found[seq] = event } }
            guard let last = page.last?["seq"]?.int, last > since else { break }
            since = last
        }
        return (from...to).map { ($0, found[$0] ?? .null) }
    }

    /// A queued event: published if it is the next, skipped (said) if the ledger lacks it.
    private func send(ifDue seq: Int64, _ event: JSON, _ delivery: inout BridgeDelivery, _ figures: inout BridgeFigures, _ link: MQTTLink, now: Double) {
        guard event != .null else {
            log(.error, "seq \(seq) is not in the daemon's ledger: stepped past; the consumer will see the hole")
            delivery.skip(through: seq)
            return
        }
        switch delivery.take(seq, now: now) {
        case .publish: send(seq, event, &delivery, &figures, link)
        case .duplicate: break
        case .gap(let from, let to):
            log(.error, "seqs \(from)…\(to) are not in the daemon's ledger: stepped past; the consumer will see the hole")
            delivery.skip(through: to)
            if delivery.take(seq, now: now) == .publish { send(seq, event, &delivery, &figures, link) }
        }
    }

    private func send(_ seq: Int64, _ event: JSON, _ delivery: inout BridgeDelivery, _ figures: inout BridgeFigures, _ link: MQTTLink) {
        figures.count(event)
        guard let mid = link.publish(configuration.topic("event"), eventPayload(seq, event)) else {
            // Not taken (the connection just dropped): the reconnect rewinds to the cursor.
            return
        }
        delivery.sent(seq, mid: mid)
    }

    /// An `event` message: the daemon's event, unchanged, with the cabinet's identity.
    func eventPayload(_ seq: Int64, _ event: JSON) -> String {
        let payload: JSON = ["v": 1, "cabinet": .string(configuration.cabinet), "site": .string(configuration.site), "seq": .int(seq),
                             "published": .double((Self.now() * 1000).rounded() / 1000), "event": event]
        return payload.description
    }

    /// B8: the consumer's ack for this cabinet moves the cursor up, never down.
    /// True when the cursor moved.
    @discardableResult
    private func take(ack payload: [UInt8], _ delivery: inout BridgeDelivery, now: Double) -> Bool {
        guard let ack = JSON.parse(String(decoding: payload, as: UTF8.self)), ack["v"]?.int == 1, let seq = ack["seq"]?.int, seq >= 0 else {
            log(.warning, "an ack that is not one (v 1, cabinet, seq): ignored")
            return false
        }
        guard ack["cabinet"]?.string == configuration.cabinet else {
            log(.warning, "an ack for cabinet '\(ack["cabinet"]?.string ?? "?")' on this cabinet's topic: ignored")
            return false
        }
        return delivery.acked(seq, now: now)
    }

    private func state(_ state: String, reason: String?, hello: JSON?, timed: Bool) -> String {
        var payload: [String: JSON] = ["v": 1, "cabinet": .string(configuration.cabinet), "site": .string(configuration.site), "state": .string(state),
                                       "bridge_version": .string(Self.version), "daemon_version": hello?["version"] ?? .null,
                                       "daemon_protocol": hello?["protocol"] ?? .null]
        if let reason { payload["reason"] = .string(reason) }
        if timed { payload["time"] = .double((Self.now() * 10).rounded() / 10) }
        // The status refresh is the bridge's word that it is alive (due at the first poll after
        // it): silence past it is a bridge gone without its will (the fleet's CabinetHearing).
        if state == "online" { payload["heartbeat_s"] = .double(configuration.statusRefreshSeconds + configuration.statusPollSeconds) }
        return JSON.object(payload).description
    }
}
