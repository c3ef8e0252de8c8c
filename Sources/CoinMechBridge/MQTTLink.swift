import CMosquitto
import Synchronization

/// One connection to the broker through libmosquitto, the Eclipse reference client: its own
/// network thread (`mosquitto_loop_start`) connects, reconnects with back-off, and reports
/// here; the bridge's thread takes what happened with `take()` and publishes.
///
/// @unchecked Sendable: `handle` is libmosquitto's, whose calls used here are safe from any
/// thread once its loop runs; `inbox` is a Mutex.
final class MQTTLink: @unchecked Sendable {
    enum Incoming: Sendable {
        case connected(code: Int32)
        case disconnected(code: Int32)
        /// The broker PUBACKed message `mid`.
        case published(mid: Int32)
        case message(topic: String, payload: [UInt8], retained: Bool)
    }

    private let handle: OpaquePointer
    private let inbox = Mutex<[Incoming]>([])
    private let subscriptions: [String]
    let host: String
    let port: Int

    /// `will`: the retained message the broker publishes if this connection dies.
    init(clientID: String, host: String, port: Int, keepalive: Int, maxInflight: Int, username: String?, password: String?,
         will: (topic: String, payload: String), subscriptions: [String]) throws(BridgeError) {
        mosquitto_lib_init()
        // A persistent session: the broker keeps the QoS 1 messages in flight across a reconnect.
        guard let made = mosquitto_new(clientID, false, nil) else { throw .mqtt("cannot make a client (out of memory, or a bad client id '\(clientID)')") }
        handle = made
        self.host = host
        self.port = port
        self.subscriptions = subscriptions
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        _ = mosquitto_int_option(handle, MOSQ_OPT_SEND_MAXIMUM, Int32(maxInflight))
        mosquitto_reconnect_delay_set(handle, 1, 30, true)
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

    /// Starts the network thread; it connects (and reconnects) on its own.
    func start(keepalive: Int) throws(BridgeError) {
        // connect_async only fails for bad arguments; a broker that is not up yet is retried by the loop.
        let code = mosquitto_connect_async(handle, host, Int32(port), Int32(keepalive))
        if code != MOSQ_ERR_SUCCESS.rawValue && code != MOSQ_ERR_ERRNO.rawValue {
            throw .mqtt("cannot connect to \(host):\(port): \(String(cString: mosquitto_strerror(code)))")
        }
        try Self.check(mosquitto_loop_start(handle), "network thread")
    }

    /// Hands a message to libmosquitto (QoS 1): its message id, or nil when it refused (not
    /// connected, or its queue is full).
    func publish(_ topic: String, _ payload: String, retain: Bool = false) -> Int32? {
        var mid: Int32 = 0
        let bytes = Array(payload.utf8)
        let code = mosquitto_publish(handle, &mid, topic, Int32(bytes.count), bytes, 1, retain)
        return code == MOSQ_ERR_SUCCESS.rawValue ? mid : nil
    }

    func take() -> [Incoming] {
        inbox.withLock { queued in
            defer { queued.removeAll() }
            return queued
        }
    }

    /// A clean disconnect (no last will), the network thread stopped, the client freed.
    func stop() {
        mosquitto_disconnect(handle)
        mosquitto_loop_stop(handle, false)
        mosquitto_destroy(handle)
    }

    private static func check(_ code: Int32, _ what: String) throws(BridgeError) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else { throw .mqtt("\(what): \(String(cString: mosquitto_strerror(code)))") }
    }
}
