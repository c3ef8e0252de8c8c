import Foundation
import CoinMechSettings
import CoinMechMQTT

/// `coinmech-bridge.yaml` (docs/FLEET.md, "Running the bridge"): which cabinet this is, where
/// its daemon's socket and its broker are, and how delivery is paced. Errors name the file, the
/// line and the key, as the daemon's do.
public struct BridgeConfiguration: Sendable {
    public var cabinet: String
    public var site: String
    public var socketPath = "/run/coinmech/coinmechd.sock"
    public var stateDirectory = "/var/lib/coinmech-bridge"
    public var mqtt: MQTT
    public var delivery = Delivery()
    /// `status`: the daemon read every `statusPollSeconds`, republished at least every
    /// `statusRefreshSeconds`; `totals` at most every `totalsMinimumInterval` (B2).
    public var statusPollSeconds = 5.0
    public var statusRefreshSeconds = 60.0
    public var totalsMinimumInterval = 1.0
    public var commands = Commands()
    /// `/metrics` on this host and port; nil: not served (`metrics.listen: off`).
    public var metricsListen: (host: String, port: Int)? = ("127.0.0.1", 9786)
    /// A `/metrics` connection idle this long is closed; at most `metricsMaxConnections` at once.
    public var metricsIdleTimeout = 30.0
    public var metricsMaxConnections = 16

    public struct MQTT: Sendable, Equatable {
        public var host: String
        /// 8883 with TLS (the default), 1883 without.
        public var port = 8883
        /// Every topic's start, `{site}` and `{cabinet}` filled in; ends with `/`.
        public var prefix: String
        public var clientID: String
        public var keepaliveSeconds = 30
        public var maxInflight = 20
        public var username: String?
        public var passwordFile: String?
        /// TLS: the CA that signed the broker's certificate, and this cabinet's certificate and
        /// key when the broker asks for one.
        public var tls: TLS? = .systemCAs
    }

    public typealias TLS = MQTTTLS

    public struct Delivery: Sendable, Equatable {
        /// `required`: the cursor is the consumer's ack; `off`: it follows PUBACK (at most once
        /// across a broker crash, and said so).
        public var acksRequired = true
        public var window = 256
        public var ackTimeoutSeconds = 30.0
    }

    /// B11, B12: which fleet commands run, how far ahead a deadline may be, how long the daemon
    /// may take to answer one.
    public struct Commands: Sendable, Equatable {
        /// Read-only, and the repair delivery needs: `inhibit` and `reload` are the operator's to add.
        public var allow: Set<FleetCommand.Name> = [.status, .totals, .resend]
        public var maxAheadSeconds = 600.0
        public var answerTimeoutSeconds = 60.0
    }

    public static func load(path: String) throws(SettingsError) -> BridgeConfiguration {
        try parse(try SettingsTable.load(path: path))
    }

    public static func parse(_ table: SettingsTable) throws(SettingsError) -> BridgeConfiguration {
        try table.rejectUnknownKeys(["cabinet", "site", "socket", "state_dir", "mqtt", "delivery", "status", "totals", "commands", "metrics"])
        func id(_ key: String) throws(SettingsError) -> String {
            guard let value = try table.string(key) else { throw table.error(key, "is required: 1 to 64 of a-z 0-9 _ -, e.g. c-0042") }
            guard FleetID.isValid(value) else { throw table.error(key, "'\(value)' is not an id: 1 to 64 of a-z 0-9 _ -, starting with a letter or a digit") }
            return value
        }
        let cabinet = try id("cabinet")
        guard !cabinet.hasPrefix("coinmech-") else { throw table.error("cabinet", "may not start with 'coinmech-': that prefix is the fleet's own broker users'") }
        let site = try id("site")
        guard let mqtt = try table.table("mqtt") else { throw table.error("mqtt", "is required: at least {host: broker.example.net}") }
        try mqtt.rejectUnknownKeys(["host", "port", "prefix", "client_id", "keepalive_s", "max_inflight", "username", "password_file", "tls"])
        guard let host = try mqtt.string("host"), !host.isEmpty else { throw mqtt.error("host", "is required: the broker's host name or address") }
        let prefixTemplate = try mqtt.string("prefix") ?? "coinmech/v1/{site}/{cabinet}/"
        let prefix = prefixTemplate.replacingOccurrences(of: "{site}", with: site).replacingOccurrences(of: "{cabinet}", with: cabinet)
        guard prefix.hasSuffix("/"), !prefix.contains("+"), !prefix.contains("#"), !prefix.hasPrefix("/") else {
            throw mqtt.error("prefix", "must end with '/', and hold no '+' or '#' (it is a topic, not a filter)")
        }
        var configuration = BridgeConfiguration(cabinet: cabinet, site: site, mqtt: MQTT(host: host, prefix: prefix, clientID: "coinmech-bridge-\(cabinet)"))
        // TLS unless the file says `tls: off` (said at start).
        configuration.mqtt.tls = try MQTTTLS.setting(in: mqtt, certificate: "the cabinet's certificate")
        configuration.mqtt.port = configuration.mqtt.tls == nil ? 1883 : 8883
        if let port = try mqtt.int("port", in: 1...65535) { configuration.mqtt.port = port }
        if let clientID = try mqtt.string("client_id") {
            guard (1...64).contains(clientID.utf8.count) else { throw mqtt.error("client_id", "must be 1 to 64 characters") }
            configuration.mqtt.clientID = clientID
        }
        if let keepalive = try mqtt.int("keepalive_s", in: 5...3600) { configuration.mqtt.keepaliveSeconds = keepalive }
        if let inflight = try mqtt.int("max_inflight", in: 1...1000) { configuration.mqtt.maxInflight = inflight }
        configuration.mqtt.username = try mqtt.string("username")
        configuration.mqtt.passwordFile = try mqtt.string("password_file")
        if configuration.mqtt.passwordFile != nil && configuration.mqtt.username == nil {
            throw mqtt.error("password_file", "needs mqtt.username")
        }
        if let socket = try table.table("socket") {
            try socket.rejectUnknownKeys(["path"])
            if let path = try socket.string("path") { configuration.socketPath = path }
        }
        if let directory = try table.string("state_dir") { configuration.stateDirectory = directory }
        if let delivery = try table.table("delivery") {
            try delivery.rejectUnknownKeys(["acks", "window", "ack_timeout_s"])
            if let acks = try delivery.string("acks") {
                guard acks == "required" || acks == "off" else { throw delivery.error("acks", "must be required or off, not '\(acks)'") }
                configuration.delivery.acksRequired = acks == "required"
            }
            if let window = try delivery.int("window", in: 1...100_000) { configuration.delivery.window = window }
            if let timeout = try delivery.double("ack_timeout_s", in: 0.1...600) { configuration.delivery.ackTimeoutSeconds = timeout }
        }
        if let status = try table.table("status") {
            try status.rejectUnknownKeys(["poll_s", "refresh_s"])
            if let poll = try status.double("poll_s", in: 0.5...3600) { configuration.statusPollSeconds = poll }
            if let refresh = try status.double("refresh_s", in: 1...86_400) { configuration.statusRefreshSeconds = refresh }
        }
        if let totals = try table.table("totals") {
            try totals.rejectUnknownKeys(["min_interval_s"])
            if let interval = try totals.double("min_interval_s", in: 0.1...3600) { configuration.totalsMinimumInterval = interval }
        }
        if let commands = try table.table("commands") {
            try commands.rejectUnknownKeys(["allow", "max_ahead_s", "answer_timeout_s"])
            if let names = try commands.strings("allow") {
                var allow: Set<FleetCommand.Name> = []
                for name in names {
                    guard let known = FleetCommand.Name(rawValue: name) else {
                        throw commands.error("allow", "'\(name)' is not a command of v1 (\(FleetCommand.Name.allCases.map(\.rawValue).joined(separator: ", ")))")
                    }
                    allow.insert(known)
                }
                configuration.commands.allow = allow
            }
            if let ahead = try commands.double("max_ahead_s", in: 1...86_400) { configuration.commands.maxAheadSeconds = ahead }
            if let timeout = try commands.double("answer_timeout_s", in: 1...3600) { configuration.commands.answerTimeoutSeconds = timeout }
        }
        if let metrics = try table.table("metrics") {
            try metrics.rejectUnknownKeys(["listen", "idle_timeout_s", "max_connections"])
            if let idle = try metrics.double("idle_timeout_s", in: 0.5...3600) { configuration.metricsIdleTimeout = idle }
            if let connections = try metrics.int("max_connections", in: 1...1024) { configuration.metricsMaxConnections = connections }
            switch try metrics.listen("listen", example: "127.0.0.1:9786, [::1]:9786") {
            case .off?: configuration.metricsListen = nil
            case .address(let host, let port)?: configuration.metricsListen = (host, port)
            case nil: break
            }
        }
        return configuration
    }

    /// The topic `name` under the prefix (`event`, `ack`, `state`).
    public func topic(_ name: String) -> String { mqtt.prefix + name }
}
