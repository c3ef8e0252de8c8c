import CMosquitto
import Foundation
import Synchronization

/// One connection to the broker through libmosquitto, the Eclipse reference client: a network
/// thread of its own runs `mosquitto_loop_forever`, which connects, reconnects with back-off
/// and reports here; the bridge's thread takes what happened with `take()` and publishes.
/// libmosquitto's loop gives up for good on some errors (protocol, TLS, out of memory): that is
/// reported too (`loopEnded`), and the bridge stops so that systemd starts it afresh.
///
/// @unchecked Sendable: `handle` is libmosquitto's, whose calls used here are safe from any
/// thread while its loop runs; `inbox` and `stopping` are a Mutex and an Atomic.
final class MQTTLink: @unchecked Sendable {
    enum Incoming: Sendable {
        case connected(code: Int32)
        case disconnected(code: Int32)
        /// The broker PUBACKed message `mid`.
        case published(mid: Int32)
        case message(topic: String, payload: [UInt8], retained: Bool)
        /// The network thread ended: after `stop`, or given up with this libmosquitto code.
        case loopEnded(code: Int32)
        /// The first connection failed with this libmosquitto code (and errno); retried.
        case connectFailed(String)
    }

    private let handle: OpaquePointer
    private let inbox = Mutex<[Incoming]>([])
    private let stopping = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)
    private let subscriptions: [String]
    let host: String
    let port: Int

    /// `will`: the retained message the broker publishes if this connection dies.
    init(clientID: String, host: String, port: Int, keepalive: Int, maxInflight: Int, username: String?, password: String?,
         will: (topic: String, payload: String), subscriptions: [String]) throws(BridgeError) {
        mosquitto_lib_init()
        // A clean session (B13): commands sent while the bridge was away must not arrive late,
        // and nothing else needs the broker to remember it: every reconnect resends from the
        // cursor, and the retained `ack` comes with the subscription.
        guard let made = mosquitto_new(clientID, true, nil) else { throw .mqtt("cannot make a client (out of memory, or a bad client id '\(clientID)')") }
        handle = made
        self.host = host
        self.port = port
        self.subscriptions = subscriptions
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        _ = mosquitto_int_option(handle, MOSQ_OPT_SEND_MAXIMUM, Int32(maxInflight))
        // 1 s, growing to 5 minutes while the broker stays away (docs/FLEET.md).
        mosquitto_reconnect_delay_set(handle, 1, 300, true)
        if let username { try Self.check(mosquitto_username_pw_set(handle, username, password), "username") }
        let willBytes = Array(will.payload.utf8)
        try Self.check(mosquitto_will_set(handle, will.topic, Int32(willBytes.count), willBytes, 1, true), "last will")
        mosquitto_connect_callback_set(handle) { _, object, code in
            guard let object else { return }
            let link = Unmanaged<MQTTLink>.fromOpaque(object).takeUnretainedValue()
            if code == 0 {
                for topic in link.subscriptions { mosquitto_subscribe(link.handle, nil, topic, 1) }
            }
            link.inbox.withLock { $0.append(.connected(code: code)) }
        }
        mosquitto_disconnect_callback_set(handle) { _, object, code in
            guard let object else { return }
            Unmanaged<MQTTLink>.fromOpaque(object).takeUnretainedValue().inbox.withLock { $0.append(.disconnected(code: code)) }
        }
        mosquitto_publish_callback_set(handle) { _, object, mid in
            guard let object else { return }
            Unmanaged<MQTTLink>.fromOpaque(object).takeUnretainedValue().inbox.withLock { $0.append(.published(mid: mid)) }
        }
        mosquitto_message_callback_set(handle) { _, object, message in
            guard let object, let message else { return }
            let topic = String(cString: message.pointee.topic)
            let payload = message.pointee.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(message.pointee.payloadlen))) } ?? []
            Unmanaged<MQTTLink>.fromOpaque(object).takeUnretainedValue().inbox.withLock {
                $0.append(.message(topic: topic, payload: payload, retained: message.pointee.retain))
            }
        }
    }

    /// Starts the network thread; it connects (and reconnects) on its own. A first connect that
    /// fails for want of the broker or of DNS (at boot) is retried there; only arguments
    /// libmosquitto refuses are an error here.
    func start(keepalive: Int) throws(BridgeError) {
        let code = mosquitto_connect_async(handle, host, Int32(port), Int32(keepalive))
        if code == MOSQ_ERR_INVAL.rawValue || code == MOSQ_ERR_NOMEM.rawValue {
            throw .mqtt("cannot connect to \(host):\(port): \(String(cString: mosquitto_strerror(code)))")
        }
        let thread = Thread { [self] in
            var first = code
            var delay: UInt32 = 1
            // Until a first connection is made (the loop reconnects by itself after that).
            while first != MOSQ_ERR_SUCCESS.rawValue && !stopping.load(ordering: .relaxed) {
                let why = first == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(first))
                inbox.withLock { $0.append(.connectFailed(why)) }
                sleep(delay)
                delay = min(delay * 2, 300)
                first = mosquitto_reconnect(handle)
            }
            let result = stopping.load(ordering: .relaxed) ? MOSQ_ERR_SUCCESS.rawValue : mosquitto_loop_forever(handle, -1, 1)
            ended.store(true, ordering: .relaxed)
            inbox.withLock { $0.append(.loopEnded(code: result)) }
        }
        thread.name = "mqtt"
        thread.start()
    }

    /// Hands a message to libmosquitto (QoS 1): its message id, or nil when it refused it.
    /// Not connected (NO_CONN), libmosquitto has queued it all the same and sends it after the
    /// reconnect: that is a message id too.
    func publish(_ topic: String, _ payload: String, retain: Bool = false) -> Int32? {
        var mid: Int32 = 0
        let bytes = Array(payload.utf8)
        let code = mosquitto_publish(handle, &mid, topic, Int32(bytes.count), bytes, 1, retain)
        return code == MOSQ_ERR_SUCCESS.rawValue || code == MOSQ_ERR_NO_CONN.rawValue ? mid : nil
    }

    func take() -> [Incoming] {
        inbox.withLock { queued in
            defer { queued.removeAll() }
            return queued
        }
    }

    /// A clean disconnect (no last will), and the network thread's end awaited for up to
    /// `seconds`; the client is freed only once the thread is gone (else the process's end
    /// frees it: a thread stuck in a connect to an unreachable broker must not hold the stop).
    func stop(waiting seconds: Double = 3) {
        stopping.store(true, ordering: .relaxed)
        mosquitto_disconnect(handle)
        let deadline = Date().addingTimeInterval(seconds)
        while !ended.load(ordering: .relaxed) && Date() < deadline { usleep(10_000) }
        if ended.load(ordering: .relaxed) { mosquitto_destroy(handle) }
    }

    private static func check(_ code: Int32, _ what: String) throws(BridgeError) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else { throw .mqtt("\(what): \(String(cString: mosquitto_strerror(code)))") }
    }
}
