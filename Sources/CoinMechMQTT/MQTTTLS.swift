import CoinMechSettings

/// TLS to the broker: the CAs that may sign the broker's certificate (a file, or a directory
/// such as the system's `/etc/ssl/certs`), and this client's certificate and key when the
/// broker asks for one.
public struct MQTTTLS: Sendable, Equatable {
    public var caFile: String?
    public var caPath: String?
    public var certFile: String?
    public var keyFile: String?

    public init(caFile: String? = nil, caPath: String? = nil, certFile: String? = nil, keyFile: String? = nil) {
        self.caFile = caFile
        self.caPath = caPath
        self.certFile = certFile
        self.keyFile = keyFile
    }

    /// TLS as it is without a `tls` key: the broker's certificate checked against the system's CAs.
    public static let systemCAs = MQTTTLS(caPath: "/etc/ssl/certs")

    /// `mqtt.tls` of the bridge's and the fleet's configurations: absent, TLS checked against
    /// the system's CAs; a table (`ca_file` or `ca_path`, `cert_file` with `key_file`); or
    /// `off`, plaintext (nil), which the program says at start. A cabinet's broker credentials
    /// and events cross networks that are not the operator's.
    public static func setting(in mqtt: SettingsTable, certificate: String) throws(SettingsError) -> MQTTTLS? {
        guard mqtt.contains("tls") else { return .systemCAs }
        if let text = try? mqtt.string("tls") {
            guard text == "off" else { throw mqtt.error("tls", "is a table ({ca_file: /etc/coinmech/fleet-ca.pem}) or off (plaintext), not '\(text)'") }
            return nil
        }
        guard let tls = try mqtt.table("tls") else { return .systemCAs }
        try tls.rejectUnknownKeys(["ca_file", "ca_path", "cert_file", "key_file"])
        let caFile = try tls.string("ca_file"), caPath = try tls.string("ca_path")
        let cert = try tls.string("cert_file"), key = try tls.string("key_file")
        guard (cert == nil) == (key == nil) else {
            throw tls.error(cert == nil ? "cert_file" : "key_file", "cert_file and key_file go together: \(certificate) and its key")
        }
        return MQTTTLS(caFile: caFile, caPath: caFile == nil && caPath == nil ? systemCAs.caPath : caPath, certFile: cert, keyFile: key)
    }

    /// What a program logs at start when the configuration turned TLS off.
    public static let plaintextWarning = "mqtt.tls is off: the broker's connection is plaintext, so anyone on the way reads every event and the password, and can pose as the broker; turn it on unless the broker is on this host"
}
