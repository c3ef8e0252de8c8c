import CoinMechHarness
import CoinMechMDB
import CoinMechModel
import CoinMechSupport
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The MDB changer host over a real pseudo-terminal against a real `coinsim --protocol mdb`,
/// on the machine's clock, joined with coinsim's ground truth.
@Suite("MDB: the changer host over a pty against coinsim's changer, joined with its truth", .serialized)
struct MDBSimulatorTests {
    /// `silence`: seconds the host holds the line open before its first word, as a daemon
    /// starting on a loaded machine does.
    @Test("every coin the changer kept reaches the host once, in order, with its value; returned coins and slugs are told apart; coins wait for the host to set the changer up",
          arguments: [0.0, 2.5])
    func hostAgainstSimulator(silence: Double) throws {
        let dir = TestSupport.temporaryDirectory("mdb-sim")
        // Cents are no MDB coin type here (the changer takes 5 cents and up): returned unreported.
        try "coins: 30\nrate_per_s: 15\nseed: 11\ncurrency: USD\nmix: {cent: 1, nickel: 1, dime: 1, quarter: 2}\nothers: {slug: 0.1, washer: 0.05}\n"
            .write(toFile: "\(dir)/s.yaml", atomically: true, encoding: .utf8)
        let sim = try ChildProcess("coinsim", ["--protocol", "mdb", "--scenario", "\(dir)/s.yaml", "--truth", "\(dir)/truth.json", "--linger-ms", "500"])
        let path = try #require(sim.readLine(), "coinsim printed no device path: \(sim.stderr)")
        let fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK)
        try #require(fd >= 0, "cannot open \(path)")
        defer { close(fd) }
        var settings = termios()
        tcgetattr(fd, &settings)
        cfmakeraw(&settings)
        tcsetattr(fd, TCSANOW, &settings)

        usleep(UInt32(silence * 1e6))
        var host = MDBChangerHost()
        var events: [MDBChangerHostEvent] = []
        func carry(_ outputs: [MDBChangerHostOutput]) {
            for output in outputs {
                switch output {
                case .send(let command): _ = command.line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                case .event(let event): events.append(event)
                }
            }
        }
        carry(host.start(now: Instant.now.nanoseconds))
        carry(host.setAllowed(0xFFFF, now: Instant.now.nanoseconds))
        let deadline = Instant.now.nanoseconds + 60_000_000_000
        var buffer = [UInt8](repeating: 0, count: 512)
        while sim.isRunning, Instant.now.nanoseconds < deadline {
            let now = Instant.now.nanoseconds
            let wake = host.nextWake ?? now + 100_000_000
            var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&waiting, 1, Int32(min(100, max(0, Int64(wake) - Int64(now)) / 1_000_000)))
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 { carry(host.received(buffer[..<count], at: Instant.now.nanoseconds)) }
            carry(host.tick(now: Instant.now.nanoseconds))
        }
        #expect(sim.wait(timeout: 10) == 0, "coinsim failed: \(sim.stderr)")

        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let truth = try decoder.decode(MDBGroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        #expect(truth.sent.insertions == 30)
        // No coin of a type the changer knows found its type disabled: the coins began once the
        // host had set the changer up (a fixed time after the line opened, a silent host's
        // first coins were returned).
        let disabled = truth.coins.filter { $0.type != nil && $0.fate == "rejected" }
        #expect(disabled.isEmpty, "returned as disabled: \(disabled.map(\.insertion))")
        let kept = truth.coins.filter { $0.fate != "rejected" }
        #expect(kept.count >= 10, "the scenario should keep most coins: \(truth.outcomes)")

        // What the host heard, against where the changer put each coin, in order.
        let deposits = events.compactMap { event -> (type: Int, routing: MDBChangerEvent.Routing, value: Int64?)? in
            if case .deposited(let type, let routing, let value, _) = event { (type, routing, value) } else { nil }
        }
        let reportedKept = deposits.filter { $0.routing.isKept }
        #expect(reportedKept.map(\.type) == kept.compactMap(\.type))
        #expect(reportedKept.map { $0.routing == .tube } == kept.map { $0.fate == "tube" })
        #expect(reportedKept.map(\.value) == kept.map(\.valueMinor), "the changer's values, read from its SETUP, are the mints' face values")
        #expect(reportedKept.compactMap(\.value).reduce(0, +) == truth.keptValue["USD"] ?? 0)
        let slugs = events.reduce(0) { total, event in if case .slugs(let count) = event { total + count } else { total } }
        #expect(slugs == truth.outcomes.slugs)
        #expect(!events.contains(.pollReplyLost))
        #expect(truth.unreadableLines == 0)
    }
}
