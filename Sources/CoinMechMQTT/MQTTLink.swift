import CMosquitto
import CoinMechModel
import CoinMechSupport
import Foundation
import Synchronization

/// One connection at a time to the broker through libmosquitto, the Eclipse reference client.
/// A network thread of its own connects, runs `mosquitto_loop` while the connection lives, and
/// after it is lost starts the client afresh (`mosquitto_reinitialise`) before connecting again,
/// backing off from 1 s to 5 minutes; the owner's thread (the bridge's, the fleet's) takes what
/// happened with `take()` and publishes.
///
/// Why afresh: libmosquitto keeps the messages of a lost connection and sends them first on the
/// next one, before the bridge can rewind to its cursor. A message handed over after a seq that
/// the dead broker had PUBACKed and lost would then reach the fleet ahead of that seq. Started
/// clean, each connection carries only what the bridge publishes on it, in seq order from the
/// cursor (B5). For the same reason nothing is accepted while no connection is up.
///
/// @unchecked Sendable: `handle` is libmosquitto's; publishing and reinitialising take `client`
/// (a Mutex), the network thread alone runs the loop, and libmosquitto's own locks (threaded
/// mode) let a publish and the loop meet. `inbox`, `up` and `stopping` are a Mutex and Atomics.
public final class MQTTLink: @unchecked Sendable {
    public enum Incoming: Sendable {
        /// The broker answered a connect: accepted (0, and the connection's generation) or refused.
        case connected(code: Int32, generation: Int)
        case disconnected(code: Int32)
        /// The broker PUBACKed message `mid` on connection `generation` (ids start again on each).
        case published(mid: Int32, generation: Int)
        case message(topic: String, payload: [UInt8], retained: Bool)
        /// A connection attempt failed (the reason); retried after the back-off.
        case connectFailed(String)
        /// A message longer than `maxPayload`, dropped unread (only its topic and size are kept).
        case oversized(topic: String, bytes: Int)
        /// The inbox reached `inboxBytes` and the link stopped reading from the broker (false),
        /// or it drained to half and the link reads again (true).
        case reading(Bool)
    }

    public struct Options: Sendable {
        public var clientID: String
        public var host: String
        public var port: Int
        public var keepalive: Int
        public var maxInflight: Int
        public var username: String?
        public var password: String?
        /// The last will (retained, QoS 1); nil for none.
        public var will: (topic: String, payload: String)?
        public var subscriptions: [String]
        public var tls: MQTTTLS?
        /// A clean session forgets the client at each disconnect; a persistent one (false) has
        /// the broker queue QoS 1 messages for it while it is away (F9).
        public var cleanSession: Bool
        /// A message longer than this is dropped in libmosquitto's callback, never copied.
        public var maxPayload: Int
        /// The most the inbox holds (payloads and topics, bytes) before the link stops reading
        /// from the broker; it reads again once the owner has taken it down to half. Nothing
        /// is lost: the broker holds what is not read, and a persistent session keeps it.
        public var inboxBytes: Int

        public init(clientID: String, host: String, port: Int, keepalive: Int, maxInflight: Int, username: String? = nil, password: String? = nil,
                    will: (topic: String, payload: String)?, subscriptions: [String], tls: MQTTTLS?, cleanSession: Bool = true,
                    maxPayload: Int = 1 << 20, inboxBytes: Int = 8 << 20) {
            self.clientID = clientID
            self.host = host
            self.port = port
            self.keepalive = keepalive
            self.maxInflight = maxInflight
            self.username = username
            self.password = password
            self.will = will
            self.subscriptions = subscriptions
            self.tls = tls
            self.cleanSession = cleanSession
            self.maxPayload = maxPayload
            self.inboxBytes = inboxBytes
        }
    }

    private let handle: OpaquePointer
    private let options: Options
    private let client = Mutex<Void>(())
    /// What arrived, each with when it arrived (`takeArrivals`), and its size in bytes.
    private let inbox = Mutex<(items: [(item: Incoming, arrived: Instant)], bytes: Int)>(([], 0))
    private let stopping = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)
    /// A connection is up (CONNACK accepted) and not yet lost.
    private let up = Atomic<Bool>(false)
    /// Connections the broker accepted, which numbers them: one that was resets the back-off.
    private let accepted = Atomic<Int>(0)
    /// The connection the bridge has seen accepted (and rewound for): only it takes publishes,
    /// so nothing goes out on a newer one before the bridge has rewound to its cursor.
    private let admitted = Atomic<Int>(-1)
    /// A clean stop was asked: no reconnecting; the loop runs until the DISCONNECT is out.
    private let stopRequested = Atomic<Bool>(false)
    /// The network thread reads from the broker (false while the inbox is full).
    private let reading = Atomic<Bool>(true)
    public var host: String { options.host }
    public var port: Int { options.port }

    public init(_ options: Options) throws(MQTTError) {
        mosquitto_lib_init()
        // The bridge's is clean (B13): commands sent while it was away must not arrive late, and
        // every connection resends from the cursor. The fleet's is persistent (F9).
        guard let made = mosquitto_new(options.clientID, options.cleanSession, nil) else { throw MQTTError("cannot make a client (out of memory, or a bad client id '\(options.clientID)')") }
        handle = made
        self.options = options
        try configure()
    }

    /// Everything `mosquitto_reinitialise` resets: options, credentials, the will, callbacks.
    private func configure() throws(MQTTError) {
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        // The bridge publishes from its own thread while this one runs the loop.
        _ = mosquitto_threaded_set(handle, true)
        _ = mosquitto_int_option(handle, MOSQ_OPT_SEND_MAXIMUM, Int32(options.maxInflight))
        if let username = options.username { try Self.check(mosquitto_username_pw_set(handle, username, options.password), "username") }
        if let tls = options.tls {
            // The broker's certificate is checked against the CA and its host name; TLS 1.2 at least.
            let code = mosquitto_tls_set(handle, tls.caFile, tls.caPath, tls.certFile, tls.keyFile, nil)
            guard code == MOSQ_ERR_SUCCESS.rawValue else {
                let cas = tls.caFile.map { "ca_file \($0)" } ?? "ca_path \(tls.caPath ?? "")"
                throw MQTTError("mqtt.tls: cannot use \(cas)\(tls.certFile.map { ", cert_file \($0), key_file \(tls.keyFile ?? "")" } ?? ""): \(String(cString: mosquitto_strerror(code))) (are they readable PEM files?)")
            }
            try Self.check(mosquitto_tls_opts_set(handle, 1, "tlsv1.2", nil), "mqtt.tls")
        }
        if let will = options.will {
            let willBytes = Array(will.payload.utf8)
            try Self.check(mosquitto_will_set(handle, will.topic, Int32(willBytes.count), willBytes, 1, true), "last will")
        }
        mosquitto_connect_callback_set(handle) { _, object, code in
            guard let object else { return }
            let link = Unmanaged<MQTTLink>.fromOpaque(object).takeUnretainedValue()
            var generation = 0
            if code == 0 {
                for topic in link.options.subscriptions { mosquitto_subscribe(link.handle, nil, topic, 1) }
                generation = link.accepted.add(1, ordering: .acquiringAndReleasing).newValue
                link.up.store(true, ordering: .releasing)
            }
            link.queue(.connected(code: code, generation: generation))
        }
        mosquitto_disconnect_callback_set(handle) { _, object, code in
            guard let object else { return }
            let link = Unmanaged<MQTTLink>.fromOpaque(object).takeUnretainedValue()
            link.up.store(false, ordering: .releasing)
            link.queue(.disconnected(code: code))
        }
        mosquitto_publish_callback_set(handle) { _, object, mid in
            guard let object else { return }
            let link = Unmanaged<MQTTLink>.fromOpaque(object).takeUnretainedValue()
            let generation = link.accepted.load(ordering: .acquiring)
            link.queue(.published(mid: mid, generation: generation))
        }
        mosquitto_message_callback_set(handle) { _, object, message in
            guard let object, let message else { return }
            let link = Unmanaged<MQTTLink>.fromOpaque(object).takeUnretainedValue()
            let topic = String(cString: message.pointee.topic)
            let length = Int(message.pointee.payloadlen)
            guard length <= link.options.maxPayload else {
                link.queue(.oversized(topic: String(topic.prefix(512)), bytes: length), bytes: 512)
                return
            }
            let payload = message.pointee.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: length)) } ?? []
            link.queue(.message(topic: topic, payload: payload, retained: message.pointee.retain), bytes: length + topic.utf8.count)
        }
    }

    /// Starts the network thread: connect, loop while the connection lives, start afresh, back
    /// off, connect again, until `stop`. A broker or DNS that is not there yet (at boot) is
    /// retried like a lost connection.
    public func start() {
        Thread.startNamed("mqtt") { [self] in
            var delay = 1.0
            var configured = true
            while !stopRequested.load(ordering: .acquiring) {
                // A full inbox is not read more of, on this connection or the next.
                while isFull() && !stopRequested.load(ordering: .acquiring) { usleep(20_000) }
                let acceptedBefore = accepted.load(ordering: .acquiring)
                let code = configured ? mosquitto_connect(handle, options.host, Int32(options.port), Int32(options.keepalive)) : MOSQ_ERR_INVAL.rawValue
                if code == MOSQ_ERR_SUCCESS.rawValue {
                    var result = MOSQ_ERR_SUCCESS.rawValue
                    // Until the connection is lost or, after a clean stop's DISCONNECT, closed.
                    while !stopping.load(ordering: .relaxed) && result == MOSQ_ERR_SUCCESS.rawValue {
                        if isFull() {
                            // Not read, still written: the owner's publishes (acks) go out and
                            // keepalive pings are sent. Held longer than the keepalive, the
                            // unanswered ping ends the connection; the next waits for room.
                            if mosquitto_want_write(handle) { result = mosquitto_loop_write(handle, 1) }
                            if result == MOSQ_ERR_SUCCESS.rawValue { result = mosquitto_loop_misc(handle) }
                            usleep(20_000)
                        } else {
                            result = mosquitto_loop(handle, 100, 1)
                        }
                    }
                    // The disconnect callback has said it, unless the loop ended without it.
                    if up.exchange(false, ordering: .acquiringAndReleasing) {
                        queue(.disconnected(code: result))
                    }
                    if accepted.load(ordering: .acquiring) != acceptedBefore {
                        delay = 1
                    } else if !stopRequested.load(ordering: .acquiring) {
                        // Lost before the broker accepted it (refused, or the link died at once).
                        queue(.connectFailed(Self.describe(result)))
                    }
                } else if configured {
                    queue(.connectFailed(Self.describe(code)))
                }
                if stopRequested.load(ordering: .acquiring) { break }
                // What libmosquitto still holds for the lost connection goes with it. A setting it
                // refuses now (a TLS file being replaced) is said, and tried again after the wait.
                configured = client.withLock { _ in
                    _ = mosquitto_reinitialise(handle, options.clientID, options.cleanSession, nil)
                    do throws(MQTTError) {
                        try configure()
                        return true
                    } catch {
                        queue(.connectFailed("\(error)"))
                        return false
                    }
                }
                // A connection the broker accepted reset the back-off; a failed or refused one grows it.
                let wait = delay
                delay = min(delay * 2, 300)
                let until = Date().addingTimeInterval(wait)
                while Date() < until && !stopRequested.load(ordering: .acquiring) { usleep(50_000) }
            }
            ended.store(true, ordering: .releasing)
        }
    }

    /// What a CONNACK's refusal code means (5: not authorised, 4: bad user name or password).
    public static func refusal(_ code: Int32) -> String { String(cString: mosquitto_connack_string(code)) }

    private static func describe(_ code: Int32) -> String {
        code == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(code))
    }

    /// Hands a message to libmosquitto (QoS 1): its message id, or nil when no connection is up
    /// or libmosquitto refused it. Nothing is queued for a connection to come.
    public func publish(_ topic: String, _ payload: String, retain: Bool = false) -> Int32? {
        var mid: Int32 = 0
        let bytes = Array(payload.utf8)
        // Checked under the lock that reinitialising takes: a publish can never land on the
        // next connection's client.
        let code = client.withLock { _ -> Int32 in
            guard up.load(ordering: .acquiring), accepted.load(ordering: .acquiring) == admitted.load(ordering: .acquiring) else {
                return MOSQ_ERR_NO_CONN.rawValue
            }
            return mosquitto_publish(handle, &mid, topic, Int32(bytes.count), bytes, 1, retain)
        }
        return code == MOSQ_ERR_SUCCESS.rawValue ? mid : nil
    }

    /// The bridge has seen connection `generation` accepted and rewound: publishes go out on it.
    public func admit(_ generation: Int) { admitted.store(generation, ordering: .releasing) }

    public func take() -> [Incoming] { takeArrivals().map(\.item) }

    /// What arrived since the last take, each with when it arrived (`Instant.now`, the
    /// monotonic clock): a loop that was held up still knows when the link went down or a
    /// message came.
    public func takeArrivals() -> [(item: Incoming, arrived: Instant)] {
        inbox.withLock { queued in
            defer {
                queued.items.removeAll()
                queued.bytes = 0
            }
            return queued.items
        }
    }

    /// Whether the inbox is full: from `inboxBytes` until it is taken down to half.
    private func isFull() -> Bool {
        let bytes = inbox.withLock { $0.bytes }
        let full = reading.load(ordering: .relaxed) ? bytes >= options.inboxBytes : bytes > options.inboxBytes / 2
        if full == reading.load(ordering: .relaxed) {
            reading.store(!full, ordering: .relaxed)
            queue(.reading(!full))
        }
        return full
    }

    private func queue(_ item: Incoming, bytes: Int = 64) {
        let arrived = Instant.now
        inbox.withLock {
            $0.items.append((item, arrived))
            $0.bytes += bytes + 64
        }
    }

    /// A clean disconnect (no last will), and the network thread's end awaited for up to
    /// `seconds`; the client is freed only once the thread is gone (else the process's end
    /// frees it: a thread stuck in a connect to an unreachable broker must not hold the stop).
    public func stop(waiting seconds: Double = 3) {
        // The DISCONNECT first, and the loop left running until it is out (the loop returns once
        // the connection closes): a socket closed without it would make the broker send the will.
        stopRequested.store(true, ordering: .releasing)
        client.withLock { _ in _ = mosquitto_disconnect(handle) }
        let deadline = Date().addingTimeInterval(seconds)
        while !ended.load(ordering: .acquiring) && Date() < deadline - seconds / 2 { usleep(10_000) }
        stopping.store(true, ordering: .relaxed)
        while !ended.load(ordering: .acquiring) && Date() < deadline { usleep(10_000) }
        if ended.load(ordering: .acquiring) { mosquitto_destroy(handle) }
    }

    private static func check(_ code: Int32, _ what: String) throws(MQTTError) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else { throw MQTTError("\(what): \(String(cString: mosquitto_strerror(code)))") }
    }
}
