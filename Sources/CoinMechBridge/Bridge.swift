import CoinMechClient
import CoinMechProtocol
import Foundation
import Synchronization

/// `coinmech-bridge`: one cabinet's daemon, read over its socket like any client, published to
/// the fleet's broker (docs/FLEET.md). Every ledger event goes to `event` in seq order, again
/// after the consumer's cursor whenever the broker may have lost it; the cursor is the
/// consumer's `ack`, kept in `cursor.json`; `state` says `online`, and the last will `offline`.
///
/// One thread runs it (`run` blocks until `stop`); libmosquitto's own thread talks to the broker.
public final class Bridge: Sendable {
    public static let version = "0.6.0"

    public let configuration: BridgeConfiguration
    private let log: @Sendable (Level, String) -> Void
    private let stopping = Atomic<Bool>(false)

    public enum Level: Sendable { case info, notice, warning, error }

    public init(configuration: BridgeConfiguration, log: @escaping @Sendable (Level, String) -> Void) {
        self.configuration = configuration
        self.log = log
    }

    public func stop() { stopping.store(true, ordering: .relaxed) }

    private static func now() -> Double { Date().timeIntervalSince1970 }

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
        if !c.delivery.acksRequired {
            log(.warning, "delivery.acks is off: the cursor follows the broker's PUBACK, so a broker crash can lose events (at most once)")
        }
        let password = try c.mqtt.passwordFile.map { file throws(BridgeError) in
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw .mqtt("cannot read mqtt.password_file \(file)") }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var daemonHello: JSON?
        let link = try MQTTLink(clientID: c.mqtt.clientID, host: c.mqtt.host, port: c.mqtt.port, keepalive: c.mqtt.keepaliveSeconds,
                                maxInflight: c.mqtt.maxInflight, username: c.mqtt.username, password: password,
                                will: (c.topic("state"), state("offline", reason: "lost", hello: nil, timed: false)), subscriptions: [c.topic("ack")])
        try link.start(keepalive: c.mqtt.keepaliveSeconds)
        log(.notice, "publishing cabinet \(c.cabinet) of site \(c.site) to \(c.mqtt.host):\(c.mqtt.port) under \(c.mqtt.prefix); cursor \(saved)")
        var connected = false
        var daemon: CoinMechConnection?
        var written = saved
        var lastWrite = 0.0
        var ledgerBehindSaid = 0.0

        while !stopping.load(ordering: .relaxed) {
            let now = Self.now()
            for incoming in link.take() {
                switch incoming {
                case .connected(let code):
                    guard code == 0 else {
                        log(.error, "the broker refused the connection (code \(code)): check mqtt.username and the broker's ACLs")
                        continue
                    }
                    connected = true
                    delivery.brokerConnected(now: now)
                    _ = link.publish(c.topic("state"), state("online", reason: nil, hello: daemonHello, timed: true), retain: true)
                    log(.notice, "connected to the broker; publishing again after the cursor \(delivery.cursor)")
                case .disconnected(let code):
                    connected = false
                    if code != 0 { log(.warning, "lost the broker (code \(code)); reconnecting") }
                case .published(let mid):
                    delivery.puback(mid, now: now)
                case .message(let topic, let payload, _):
                    guard topic == c.topic("ack") else { continue }
                    take(ack: payload, &delivery, now: now)
                }
            }
            delivery.tick(now: now)
            if delivery.cursor != written, now - lastWrite >= 1 {
                do throws(BridgeError) {
                    try cursorFile.write(delivery.cursor, time: now)
                    written = delivery.cursor
                } catch {
                    log(.error, "\(error)")
                }
                lastWrite = now
            }
            guard connected else {
                usleep(20_000)
                continue
            }
            if delivery.subscribeFrom != nil { daemon = nil }
            if daemon == nil {
                do throws(ClientError) {
                    let connection = try CoinMechConnection(path: c.socketPath)
                    let last = connection.hello["seq"]?.int ?? 0
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
                } catch {
                    usleep(200_000)
                    continue
                }
            }
            guard delivery.canPublish, let connection = daemon else {
                usleep(5_000)
                continue
            }
            do throws(ClientError) {
                guard let message = try connection.nextEvent(timeout: 0.05) else { continue }
                guard message["type"] == "event", let seq = message["seq"]?.int, let event = message["event"] else {
                    // Overflow: the daemon cut the subscription off; it goes on after what was published.
                    log(.warning, "the daemon cut the subscription off (\(message["type"]?.string ?? "?")): subscribing again after seq \(delivery.published)")
                    daemon = nil
                    delivery.daemonLost()
                    continue
                }
                try publish(seq, event, connection, &delivery, link)
            } catch {
                log(.warning, "lost the daemon (\(error)); subscribing again after seq \(delivery.published)")
                daemon = nil
                delivery.daemonLost()
                usleep(100_000)
            }
        }
        // A clean stop: `offline` said (and PUBACKed, briefly waited for), the cursor saved.
        if connected, let mid = link.publish(c.topic("state"), state("offline", reason: "stopped", hello: daemonHello, timed: true), retain: true) {
            let deadline = Self.now() + 2
            waiting: while Self.now() < deadline {
                for incoming in link.take() { if case .published(mid) = incoming { break waiting } }
                usleep(10_000)
            }
        }
        link.stop()
        if delivery.cursor != written { try cursorFile.write(delivery.cursor, time: Self.now()) }
        log(.notice, "stopped; cursor \(delivery.cursor)")
    }

    /// One event to `event`, after any seqs missing before it (B4), read from the ledger.
    private func publish(_ seq: Int64, _ event: JSON, _ connection: CoinMechConnection, _ delivery: inout BridgeDelivery, _ link: MQTTLink) throws(ClientError) {
        switch delivery.take(seq) {
        case .duplicate:
            return
        case .gap(let from, let to):
            log(.warning, "seqs \(from)…\(to) did not come on the subscription: reading them from the ledger")
            let missing = try connection.request(.events(since: from - 1, limit: min(to - from + 1, 1000)))
            for earlier in missing["events"]?.array ?? [] {
                guard let earlierSeq = earlier["seq"]?.int, earlierSeq < seq, delivery.take(earlierSeq) == .publish else { continue }
                send(earlierSeq, earlier, &delivery, link)
            }
            if delivery.take(seq) == .publish { send(seq, event, &delivery, link) }
        case .publish:
            send(seq, event, &delivery, link)
        }
    }

    private func send(_ seq: Int64, _ event: JSON, _ delivery: inout BridgeDelivery, _ link: MQTTLink) {
        let payload: JSON = ["v": 1, "cabinet": .string(configuration.cabinet), "site": .string(configuration.site), "seq": .int(seq),
                             "published": .double((Self.now() * 1000).rounded() / 1000), "event": event]
        guard let mid = link.publish(configuration.topic("event"), payload.description) else {
            // Not taken (the connection just dropped): the reconnect rewinds to the cursor.
            return
        }
        delivery.sent(seq, mid: mid)
    }

    /// B8: the consumer's ack for this cabinet moves the cursor up, never down.
    private func take(ack payload: [UInt8], _ delivery: inout BridgeDelivery, now: Double) {
        guard let ack = JSON.parse(String(decoding: payload, as: UTF8.self)), ack["v"]?.int == 1, let seq = ack["seq"]?.int, seq >= 0 else {
            return log(.warning, "an ack that is not one (v 1, cabinet, seq): ignored")
        }
        guard ack["cabinet"]?.string == configuration.cabinet else {
            return log(.warning, "an ack for cabinet '\(ack["cabinet"]?.string ?? "?")' on this cabinet's topic: ignored")
        }
        delivery.acked(seq, now: now)
    }

    private func state(_ state: String, reason: String?, hello: JSON?, timed: Bool) -> String {
        var payload: [String: JSON] = ["v": 1, "cabinet": .string(configuration.cabinet), "site": .string(configuration.site), "state": .string(state),
                                       "bridge_version": .string(Self.version), "daemon_version": hello?["version"] ?? .null,
                                       "daemon_protocol": hello?["protocol"] ?? .null]
        if let reason { payload["reason"] = .string(reason) }
        if timed { payload["time"] = .double((Self.now() * 10).rounded() / 10) }
        return JSON.object(payload).description
    }
}
