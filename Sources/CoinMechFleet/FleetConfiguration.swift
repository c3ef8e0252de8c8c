import CoinMechMQTT
import CoinMechSettings
import Foundation

/// `coinmech-fleet.yaml` (docs/FLEET.md, "Running the fleet"): the broker, the database, the
/// dashboard's address, and the ingest's and alerts' pacing. Errors name the file, line and key.
public struct FleetConfiguration: Sendable {
    /// This instance's name, carried in acks (`by`) and commands.
    public var instance = "fleet"
    public var mqtt: MQTT
    public var database: Database
    /// The dashboard and `/metrics`; nil: not served.
    public var httpListen: (host: String, port: Int)? = ("127.0.0.1", 9780)
    public var http = HTTP()

    public struct HTTP: Sendable, Equatable {
        /// A connection with no request for this long (or a request's head not sent within it) is closed.
        public var idleTimeoutSeconds = 30.0
        /// Connections served at once: beyond, new ones wait in the kernel's backlog.
        public var maxConnections = 256
        /// Peers whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed: the TLS proxy in front.
        public var trustedProxies: [String] = ["127.0.0.1", "::1"]
        public init() {}
    }
    public var ingest = Ingest()
    public var alerts = Alerts()

    public struct MQTT: Sendable, Equatable {
        public var host: String
        /// 8883 with TLS (the default), 1883 without.
        public var port = 8883
        /// The topics' start before `<site>/<cabinet>/`; ends with `/`.
        public var prefix = "coinmech/v1/"
        /// Fixed, for the persistent session (F9).
        public var clientID = "coinmech-fleet"
        /// The sites this instance takes (partitioning by site: one writer per cabinet); nil: all.
        public var sites: [String]?
        public var keepaliveSeconds = 30
        public var maxInflight = 100
        public var username: String?
        public var passwordFile: String?
        /// nil: plaintext, only when the file says `tls: off`.
        public var tls: MQTTTLS? = .systemCAs
    }

    public struct Database: Sendable, Equatable {
        /// A Unix socket's directory (`/run/postgresql`), or a TCP host.
        public var socketDirectory: String?
        public var host: String?
        public var port = 5432
        public var user = "coinmech-fleet"
        public var passwordFile: String?
        public var name = "coinmech_fleet"
        /// How long one call may take (a statement, the wait for a connection, the rows) before
        /// it is given up and tried again on a new pool (`FleetDatabase`). At most 20 s: with the
        /// retry's back-off (10 s) it stays inside half the unit's `WatchdogSec` (60 s).
        public var timeoutSeconds = 15.0
    }

    public struct Ingest: Sendable, Equatable {
        /// Events per transaction at most.
        public var batchMax = 1000
        /// Writers: batches committed at once, each cabinet always by the same one (`WriterLanes`).
        public var writers = 4
        /// F6: at most one ack per cabinet per this many seconds, the last always sent.
        public var ackIntervalSeconds = 1.0
        /// F8: a seq missing below a stored one for this long is a gap.
        public var gapGraceSeconds = 30.0
        /// How long a `cmd/resend` may wait at the bridge before it is not started.
        public var resendDeadlineSeconds = 60.0
        /// A message longer than this is refused unread (`FleetLimits.messageBytes`).
        public var maxMessageBytes = FleetLimits.messageBytes
    }

    public struct Alerts: Sendable, Equatable {
        public var checkSeconds = 5.0
        /// A cabinet offline longer than this.
        public var offlineAfterSeconds = 600.0
        /// No credit for this long, counted only while the fleet's clock is in `openingHours`.
        public var noCreditSeconds = 6 * 3600.0
        /// Opening hours in the fleet's time zone as minutes of the day, [start, end); nil: all day.
        public var openingHours: Range<Int>?
        public var timeZone = "UTC"
        public init() {}
    }

    public static func load(path: String) throws(SettingsError) -> FleetConfiguration {
        try parse(try SettingsTable.load(path: path))
    }

    public static func parse(_ table: SettingsTable) throws(SettingsError) -> FleetConfiguration {
        try table.rejectUnknownKeys(["instance", "mqtt", "database", "http", "ingest", "alerts"])
        guard let mqtt = try table.table("mqtt") else { throw table.error("mqtt", "is required: at least {host: broker.example.net}") }
        try mqtt.rejectUnknownKeys(["host", "port", "prefix", "client_id", "keepalive_s", "max_inflight", "username", "password_file", "tls", "sites"])
        guard let host = try mqtt.string("host"), !host.isEmpty else { throw mqtt.error("host", "is required: the broker's host name or address") }
        var broker = MQTT(host: host)
        if let prefix = try mqtt.string("prefix") {
            guard prefix.hasSuffix("/"), !prefix.contains("+"), !prefix.contains("#"), !prefix.hasPrefix("/") else {
                throw mqtt.error("prefix", "must end with '/', and hold no '+' or '#': the part before <site>/<cabinet>/")
            }
            broker.prefix = prefix
        }
        // TLS unless the file says `tls: off` (said at start).
        broker.tls = try MQTTTLS.setting(in: mqtt, certificate: "the fleet's certificate")
        broker.port = broker.tls == nil ? 1883 : 8883
        if let port = try mqtt.int("port", in: 1...65535) { broker.port = port }
        if let clientID = try mqtt.string("client_id") {
            guard (1...64).contains(clientID.utf8.count) else { throw mqtt.error("client_id", "must be 1 to 64 characters") }
            broker.clientID = clientID
        }
        if let keepalive = try mqtt.int("keepalive_s", in: 5...3600) { broker.keepaliveSeconds = keepalive }
        if let inflight = try mqtt.int("max_inflight", in: 1...10_000) { broker.maxInflight = inflight }
        if let sites = try mqtt.strings("sites") {
            guard !sites.isEmpty else { throw mqtt.error("sites", "lists the sites this instance takes; leave it out for all") }
            for site in sites where site.isEmpty || site.contains("/") || site.contains("+") || site.contains("#") {
                throw mqtt.error("sites", "'\(site)' is not a site id (a–z 0–9 _ -)")
            }
            broker.sites = sites
        }
        broker.username = try mqtt.string("username")
        broker.passwordFile = try mqtt.string("password_file")
        if broker.passwordFile != nil && broker.username == nil { throw mqtt.error("password_file", "needs mqtt.username") }

        var database = Database()
        if let db = try table.table("database") {
            try db.rejectUnknownKeys(["socket_dir", "host", "port", "user", "password_file", "name", "timeout_s"])
            database.socketDirectory = try db.string("socket_dir")
            database.host = try db.string("host")
            if database.socketDirectory != nil && database.host != nil { throw db.error("host", "give socket_dir or host, not both") }
            if let port = try db.int("port", in: 1...65535) { database.port = port }
            if let user = try db.string("user") { database.user = user }
            database.passwordFile = try db.string("password_file")
            if let name = try db.string("name") { database.name = name }
            if let timeout = try db.double("timeout_s", in: 1...20) { database.timeoutSeconds = timeout }
        }
        if database.socketDirectory == nil && database.host == nil { database.socketDirectory = "/run/postgresql" }

        var configuration = FleetConfiguration(mqtt: broker, database: database)
        if let instance = try table.string("instance") {
            guard (1...64).contains(instance.utf8.count) else { throw table.error("instance", "must be 1 to 64 characters") }
            configuration.instance = instance
        }
        if let http = try table.table("http") {
            try http.rejectUnknownKeys(["listen", "idle_timeout_s", "max_connections", "trusted_proxies"])
            if let idle = try http.double("idle_timeout_s", in: 1...3600) { configuration.http.idleTimeoutSeconds = idle }
            if let connections = try http.int("max_connections", in: 1...100_000) { configuration.http.maxConnections = connections }
            if let proxies = try http.strings("trusted_proxies") {
                for proxy in proxies where proxy.isEmpty || proxy.contains("/") {
                    throw http.error("trusted_proxies", "'\(proxy)' is not an address (127.0.0.1, ::1, 10.0.0.5): one proxy each")
                }
                configuration.http.trustedProxies = proxies
            }
            switch try http.listen("listen", example: "127.0.0.1:9780") {
            case .off?: configuration.httpListen = nil
            case .address(let host, let port)?: configuration.httpListen = (host, port)
            case nil: break
            }
        }
        if let ingest = try table.table("ingest") {
            try ingest.rejectUnknownKeys(["batch_max", "writers", "ack_interval_s", "gap_grace_s", "resend_deadline_s", "max_message_bytes"])
            if let batch = try ingest.int("batch_max", in: 1...100_000) { configuration.ingest.batchMax = batch }
            // The pool holds 8 connections: the writers leave some for the pages and the alerts.
            if let writers = try ingest.int("writers", in: 1...6) { configuration.ingest.writers = writers }
            if let interval = try ingest.double("ack_interval_s", in: 0...60) { configuration.ingest.ackIntervalSeconds = interval }
            if let grace = try ingest.double("gap_grace_s", in: 0.1...86_400) { configuration.ingest.gapGraceSeconds = grace }
            if let deadline = try ingest.double("resend_deadline_s", in: 5...600) { configuration.ingest.resendDeadlineSeconds = deadline }
            if let bytes = try ingest.int("max_message_bytes", in: 1024...(16 << 20)) { configuration.ingest.maxMessageBytes = bytes }
        }
        if let alerts = try table.table("alerts") {
            try alerts.rejectUnknownKeys(["check_s", "offline_after_s", "no_credit_s", "opening_hours", "time_zone"])
            if let check = try alerts.double("check_s", in: 0.1...3600) { configuration.alerts.checkSeconds = check }
            if let offline = try alerts.double("offline_after_s", in: 0...86_400 * 7) { configuration.alerts.offlineAfterSeconds = offline }
            if let quiet = try alerts.double("no_credit_s", in: 1...86_400 * 30) { configuration.alerts.noCreditSeconds = quiet }
            if let hours = try alerts.string("opening_hours") {
                guard let range = Self.openingHours(hours) else {
                    throw alerts.error("opening_hours", "'\(hours)' is not HH:MM-HH:MM (e.g. 07:00-22:00), start before end")
                }
                configuration.alerts.openingHours = range
            }
            if let zone = try alerts.string("time_zone") {
                guard TimeZone(identifier: zone) != nil else { throw alerts.error("time_zone", "'\(zone)' is not a time zone (e.g. Europe/Paris, UTC)") }
                configuration.alerts.timeZone = zone
            }
        }
        return configuration
    }

    /// The topic filters of the ingest: every site's, or those of `mqtt.sites`.
    public var subscriptions: [String] {
        (mqtt.sites ?? ["+"]).flatMap { site in ["event", "state", "status", "totals", "reply/+"].map { "\(mqtt.prefix)\(site)/+/\($0)" } }
    }

    /// `07:00-22:00` as minutes of the day.
    static func openingHours(_ text: String) -> Range<Int>? {
        let parts = text.split(separator: "-")
        guard parts.count == 2, let start = minutes(parts[0]), let end = minutes(parts[1]), start < end else { return nil }
        return start..<end
    }

    private static func minutes(_ text: Substring) -> Int? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: ":")
        guard parts.count == 2, let h = Int(parts[0]), let m = Int(parts[1]), (0...24).contains(h), (0...59).contains(m), h * 60 + m <= 1440 else { return nil }
        return h * 60 + m
    }
}
