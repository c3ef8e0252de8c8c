import Foundation

/// The tests' certificate authority and the broker's certificate it signed (`make test-ca`,
/// scripts/test-ca): the chaos runs speak TLS to their broker, as the shipped configurations do.
public struct TestCA: Sendable {
    public let dir: String
    public var caFile: String { "\(dir)/ca.pem" }
    public var brokerCertificate: String { "\(dir)/broker.pem" }
    public var brokerKey: String { "\(dir)/broker.key" }

    public init(dir: String) throws(BrokerError) {
        self.dir = dir
        for file in ["ca.pem", "broker.pem", "broker.key"] where !FileManager.default.fileExists(atPath: "\(dir)/\(file)") {
            throw BrokerError("\(dir)/\(file) not found: `make test-ca` makes the tests' CA (scripts/test-ca \(dir)), or give --ca none for plaintext")
        }
    }
}
