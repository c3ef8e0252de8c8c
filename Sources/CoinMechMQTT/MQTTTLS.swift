/// TLS to the broker: the CA that signed the broker's certificate, and this client's
/// certificate and key when the broker asks for one.
public struct MQTTTLS: Sendable, Equatable {
    public var caFile: String
    public var certFile: String?
    public var keyFile: String?

    public init(caFile: String, certFile: String? = nil, keyFile: String? = nil) {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
    }
}
