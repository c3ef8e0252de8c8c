import CoinMechHarness
import CoinMechProtocol
@testable import CoinMechTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The bridge against brokers that want to know who it is: TLS with client certificates and the
/// ACL file of docs/FLEET.md, and a user name with a password (docs/FLEET.md, "Broker ACLs").
@Suite("Fleet bridge security: TLS with a client certificate and the documented ACLs; a password; refusals said", .serialized)
struct BridgeSecurityEndToEndTests {
    typealias Broker = BridgeEndToEndTests.Broker

    static func run(_ tool: String, _ arguments: [String]) throws {
        let child = try ChildProcess(tool, arguments, absolute: true)
        guard child.wait(timeout: 60) == 0 else { throw TestFailure("\(tool) \(arguments.joined(separator: " ")) failed: \(child.stderr)") }
    }

    /// A CA, the broker's certificate for 127.0.0.1, and a client certificate per name (its CN
    /// is the broker user name: use_identity_as_username).
    static func certificates(in dir: String, clients: [String]) throws {
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run("/usr/bin/openssl", ["req", "-x509"] + ec + ["-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.pem", "-days", "2", "-subj", "/CN=coinmech-test-ca"])
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: "\(dir)/san.ext", atomically: true, encoding: .utf8)
        for (name, cn, ext) in [("server", "127.0.0.1", true)] + clients.map({ ($0, $0, false) }) {
            try run("/usr/bin/openssl", ["req"] + ec + ["-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr", "-subj", "/CN=\(cn)"])
            try run("/usr/bin/openssl", ["x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key", "-CAcreateserial",
                                         "-out", "\(dir)/\(name).pem", "-days", "2"] + (ext ? ["-extfile", "\(dir)/san.ext"] : []))
            chmod("\(dir)/\(name).key", 0o600)
        }
    }

    /// The ACL file exactly as docs/FLEET.md gives it.
    static func documentedACL() throws -> String {
        let page = try String(contentsOfFile: "\(TestSupport.packageRoot)/docs/FLEET.md", encoding: .utf8)
        let start = try #require(page.range(of: "    # /etc/mosquitto/coinmech.acl"))
        let block = page[start.lowerBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { $0.hasPrefix("    ") || $0.isEmpty }
        return block.map { $0.dropFirst(min(4, $0.count)) }.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines) + "\n"
    }

    @Test("over TLS with client certificates and the documented ACLs the fleet gets the cabinet's events; what the ACLs deny never arrives; no certificate, no connection")
    func tlsAndACL() throws {
        let harness = try DaemonHarness()
        let dir = TestSupport.temporaryDirectory("mqtt-tls")
        try Self.certificates(in: dir, clients: ["c-0042", "coinmech-fleet"])
        try Self.documentedACL().write(toFile: "\(dir)/coinmech.acl", atomically: true, encoding: .utf8)
        let port = try Loopback.freePort()
        try """
            listener \(port) 127.0.0.1
            cafile \(dir)/ca.pem
            certfile \(dir)/server.pem
            keyfile \(dir)/server.key
            require_certificate true
            use_identity_as_username true
            allow_anonymous false
            acl_file \(dir)/coinmech.acl
            user root
            """.write(toFile: "\(dir)/mosquitto.conf", atomically: true, encoding: .utf8)
        let broker = try ChildProcess("/usr/sbin/mosquitto", ["-c", "\(dir)/mosquitto.conf"], absolute: true)
        try TestSupport.waitUntil("mosquitto listening with TLS", timeout: 20) {
            guard broker.isRunning else { throw TestFailure("mosquitto exited: \(broker.stderr)") }
            return Loopback.accepts(port)
        }
        let tls = { (who: String) in ["-h", "127.0.0.1", "-p", "\(port)", "--cafile", "\(dir)/ca.pem", "--cert", "\(dir)/\(who).pem", "--key", "\(dir)/\(who).key"] }
        let fleet = try ChildProcess("/usr/bin/mosquitto_sub", tls("coinmech-fleet") + ["-q", "1", "-v", "-t", "coinmech/v1/#"], absolute: true)
        let bridgeArguments = try harness.bridgeConfiguration(mqtt: "{host: 127.0.0.1, port: \(port), keepalive_s: 5, tls: {ca_file: \(dir)/ca.pem, cert_file: \(dir)/c-0042.pem, key_file: \(dir)/c-0042.key}}", "metrics: {listen: off}", "delivery: {acks: off}")
        try harness.startSimulator("coins: 4\nrate_per_s: 10\nseed: 2\nmix: {quarter: 1}\n")
        try harness.startDaemon()
        let bridge = try ChildProcess("coinmech-bridge", bridgeArguments)
        defer {
            for child in [bridge, fleet, broker] { child.signal(SIGKILL); _ = child.wait(timeout: 10) }
            _ = try? harness.stopDaemon()
        }
        var lines: [String] = []
        func read(until done: (String) -> Bool, _ what: String) throws {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                guard let line = fleet.readLine(timeout: 1) else { continue }
                lines.append(line)
                if done(line) { return }
            }
            throw TestFailure("the fleet never saw \(what): \(lines.suffix(5)); bridge: \(bridge.stderr)")
        }
        try read(until: { $0.hasPrefix("coinmech/v1/test-site/c-0042/event ") }, "an event over TLS")
        #expect(lines.contains { $0.hasPrefix("coinmech/v1/test-site/c-0042/state ") && $0.contains(#""online""#) }, "\(lines)")

        // What the ACLs deny, each from its side, then a marker the cabinet may write: when the
        // marker arrives, the broker has handled every one before it.
        let denied = [("c-0042", "coinmech/v1/test-site/c-0099/event"), ("c-0042", "coinmech/v1/test-site/c-0042/cmd/inhibit"),
                      ("c-0042", "coinmech/v1/test-site/c-0042/ack"), ("coinmech-fleet", "coinmech/v1/test-site/c-0042/event")]
        for (who, topic) in denied {
            try Self.run("/usr/bin/mosquitto_pub", tls(who) + ["-q", "1", "-t", topic, "-m", "denied-\(who)"])
        }
        try Self.run("/usr/bin/mosquitto_pub", tls("c-0042") + ["-q", "1", "-t", "coinmech/v1/test-site/c-0042/reply/marker", "-m", "marker"])
        try read(until: { $0.hasSuffix(" marker") }, "the marker")
        #expect(!lines.contains { $0.contains("denied-") }, "a publish the ACLs deny reached the fleet: \(lines.filter { $0.contains("denied-") })")

        // No client certificate: the broker refuses the connection.
        let anonymous = try ChildProcess("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(port)", "--cafile", "\(dir)/ca.pem", "-C", "1", "-W", "5",
                                                                   "-t", "coinmech/v1/#"], absolute: true)
        let status = anonymous.wait(timeout: 20)
        #expect(status != nil && status != 0, "a client without a certificate was let in")
    }

    @Test("a user name and password file: the right one publishes; a wrong one is refused, said in the log and retried")
    func password() throws {
        let harness = try DaemonHarness()
        let dir = TestSupport.temporaryDirectory("mqtt-password")
        try Self.run("/usr/bin/mosquitto_passwd", ["-b", "-c", "\(dir)/passwords", "c-0042", "s3cret"])
        let port = try Loopback.freePort()
        try """
            listener \(port) 127.0.0.1
            allow_anonymous false
            password_file \(dir)/passwords
            user root
            """.write(toFile: "\(dir)/mosquitto.conf", atomically: true, encoding: .utf8)
        let broker = try ChildProcess("/usr/sbin/mosquitto", ["-c", "\(dir)/mosquitto.conf"], absolute: true)
        try TestSupport.waitUntil("mosquitto listening", timeout: 20) {
            guard broker.isRunning else { throw TestFailure("mosquitto exited: \(broker.stderr)") }
            return Loopback.accepts(port)
        }
        try harness.startDaemon()
        var bridges: [ChildProcess] = []
        defer {
            for child in bridges + [broker] { child.signal(SIGKILL); _ = child.wait(timeout: 10) }
            _ = try? harness.stopDaemon()
        }
        for (name, secret) in [("right", "s3cret"), ("wrong", "guess")] {
            try "\(secret)\n".write(toFile: "\(dir)/\(name).password", atomically: true, encoding: .utf8)
            chmod("\(dir)/\(name).password", 0o600)
            try """
                cabinet: c-0042
                site: test-site
                socket: {path: \(harness.dir)/run/coinmechd.sock}
                state_dir: \(harness.dir)/bridge-\(name)
                metrics: {listen: off}
                mqtt: {host: 127.0.0.1, port: \(port), keepalive_s: 5, client_id: bridge-\(name), username: c-0042, password_file: \(dir)/\(name).password, tls: off}
                """.write(toFile: "\(harness.dir)/\(name).yaml", atomically: true, encoding: .utf8)
            bridges.append(try ChildProcess("coinmech-bridge", ["--config", "\(harness.dir)/\(name).yaml"]))
        }
        let state = try ChildProcess("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(port)", "-u", "c-0042", "-P", "s3cret", "-C", "1", "-W", "20",
                                                               "-t", "coinmech/v1/test-site/c-0042/state"], absolute: true)
        #expect(JSON.parse(state.readLine(timeout: 20) ?? "")?["state"] == "online", "the bridge with the right password: \(bridges[0].stderr)")
        try TestSupport.waitUntil("the wrong password's refusal in the bridge's log, and a retry", timeout: 20) {
            bridges[1].stderr.components(separatedBy: "refused the connection").count > 2
        }
        #expect(bridges[1].isRunning, "a refused bridge retries, it does not exit")
    }
}
