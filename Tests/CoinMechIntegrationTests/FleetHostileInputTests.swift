import CoinMechHarness
import CoinMechProtocol
@testable import CoinMechTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What one cabinet, or anyone holding its broker credentials, can send the fleet over a real
/// mosquitto (docs/FLEET.md, "What a cabinet cannot do to the fleet"): each finding of the
/// fleet's review, as it came in.
@Suite("Fleet against a hostile cabinet: no message crashes it, overflows its sums or stalls the others", .serialized)
struct FleetHostileInputTests {
    typealias Rig = FleetEndToEndTests.Rig

    /// Answers every `cmd/resend` of `cabinet` with its whole range declared missing, as a
    /// cabinet that lies would, for `seconds`.
    static func answerResendsMissing(_ rig: Rig, cabinet: String, commands: ChildProcess, seconds: Double) throws -> Int {
        var answered = 0
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            guard let line = commands.readLine(timeout: max(deadline.timeIntervalSinceNow, 0.1)) else { continue }
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].hasSuffix("/cmd/resend"), let command = JSON.parse(String(parts[1])),
                  let id = command["id"]?.string, let from = command["args"]?["from"]?.int, let to = command["args"]?["to"]?.int else { continue }
            try rig.publish("s1/\(cabinet)/reply/\(id)", #"{"v":1,"cabinet":"\#(cabinet)","site":"s1","id":"\#(id)","cmd":"resend","time":1.0,"ok":true,"result":{"from":\#(from),"to":\#(to),"resent":0,"missing":[[\#(from),\#(to)]]}}"#)
            answered += 1
        }
        return answered
    }

    @Test("seq 2^63 − 1 answered by 'missing' at every resend: the fleet neither traps nor stores it, now or after a restart; 2^53 and 2^53 + 1 are refused too")
    func seqOverflow() throws {
        let rig = try Rig("fleet-hostile-seq")
        let commands = try rig.subscribe("s1/h-1/cmd/#")
        try rig.waitUntilListening()
        func event(_ seq: String) -> String {
            #"{"v":1,"cabinet":"h-1","site":"s1","seq":\#(seq),"published":1.0,"event":{"seq":\#(seq),"time":1795290000.0,"kind":"decision"}}"#
        }
        // The contract's last seq, and three beyond it.
        for seq in ["9007199254740991", "9007199254740992", "9007199254740993", "9223372036854775807"] { try rig.publish("s1/h-1/event", event(seq)) }
        // Three beyond the contract's range; the last seq of the contract is more than
        // FleetLimits.maxAhead above the cabinet's contiguous seq (0): not held, the hole below
        // it asked for a window at a time.
        try rig.waitUntil("the four refused: three seq_range, one ahead", timeout: 20) {
            let refused = ((try? HTTPProbe(port: rig.httpPort).request("GET", "/metrics").body) ?? "").split(separator: "\n").filter { $0.hasPrefix("coinmech_fleet_refused_total{") }
            func count(_ kind: String) -> Double? { refused.first { $0.contains("\"\(kind)\"") }.flatMap { Double($0.split(separator: " ").last ?? "") } }
            return count("seq_range") == 3 && count("ahead") == 1
        }
        // Every hole it is asked for, it says is missing: before seqs were bounded, the fleet
        // then counted past Int64.max and died of a trap (SIGILL), at every restart.
        let answered = try Self.answerResendsMissing(rig, cabinet: "h-1", commands: commands, seconds: 8)
        #expect(answered >= 1, "no resend was asked: \(rig.fleet.stderr.suffix(2000))")
        #expect(rig.fleet.isRunning, "coinmech-fleet died: \(rig.fleet.stderr.suffix(3000))")
        #expect(try rig.query("SELECT count(*) FROM events WHERE cabinet = 'h-1'") == "0", "nothing beyond the window or the contract's range stored")
        try rig.crashFleet()
        _ = try Self.answerResendsMissing(rig, cabinet: "h-1", commands: commands, seconds: 4)
        #expect(rig.fleet.isRunning, "coinmech-fleet died after its restart: \(rig.fleet.stderr.suffix(3000))")
        commands.signal(SIGTERM)
    }

    @Test("two coins of 9,000,000,000,000,000,000 minor units: refused at the edge, and sums over such rows already stored shown, never a 500 for every operator")
    func moneyOverflow() throws {
        let rig = try Rig("fleet-hostile-money")
        try rig.waitUntilListening()
        try rig.setOperator("alice", role: "operator", password: "alice-password")
        func coin(_ cabinet: String, _ seq: Int, _ value: String) -> String {
            #"{"v":1,"cabinet":"\#(cabinet)","site":"s1","seq":\#(seq),"published":1.0,"event":{"seq":\#(seq),"time":1795290000.0,"kind":"coin","currency":"USD","denomination":"quarter","value_minor":\#(value)}}"#
        }
        try rig.publish("s1/h-1/event", coin("h-1", 1, "9000000000000000000"))
        try rig.publish("s1/h-1/event", coin("h-1", 2, "9000000000000000000"))
        try rig.publish("s1/h-1/event", coin("h-1", 3, "-25"))
        try rig.publish("s1/c-1/event", coin("c-1", 1, "25"))
        try rig.waitUntil("the honest coin stored", timeout: 20) { try rig.query("SELECT count(*) FROM events WHERE cabinet = 'c-1'") == "1" }
        // Rows a database kept from before the fleet bounded values (or wrote by hand).
        _ = try rig.query("""
            INSERT INTO cabinets (cabinet, site, first_seen) VALUES ('h-2', 's1', 0);
            INSERT INTO events (cabinet, seq, kind, time, received, event) SELECT 'h-2', s, 'coin', 1795290000, 0,
                jsonb_build_object('seq', s, 'kind', 'coin', 'currency', 'USD', 'value_minor', 9000000000000000000::bigint) FROM generate_series(1, 3) s;
            INSERT INTO events (cabinet, seq, kind, time, received, event) VALUES ('h-2', 4, 'cctalk_lost', 1795290000, 0, '{"detail":{"count":"lots"}}'),
                ('h-2', 5, 'collect', 1795290000, 0, '{"collected":[{"currency":"USD","value_minor":"x"}]}');
            UPDATE cabinets SET status = '{"unconfirmed": 1e40, "acceptor": {"lost_events": -1e40}}' WHERE cabinet = 'h-2'
            """)
        let http = HTTPProbe(port: rig.httpPort)
        let alice = try rig.login(http, "alice", "alice-password")
        let fleet = try http.request("GET", "/", cookie: alice)
        #expect(fleet.status == 200, "the fleet page: \(fleet.status) \(fleet.body.prefix(300))")
        #expect(fleet.body.contains(#"data-cash-box="USD:25""#), "the honest cabinet's cash box")
        for cabinet in ["h-2", "c-1"] {
            let page = try http.request("GET", "/cabinet/\(cabinet)", cookie: alice)
            #expect(page.status == 200, "/cabinet/\(cabinet): \(page.status) \(page.body.prefix(300))")
        }
        #expect(try http.request("GET", "/cabinet/h-1", cookie: alice).status != 500)
        #expect(try rig.query("SELECT count(*) FROM events WHERE cabinet = 'h-1'") == "0", "no coin outside 0 … 10,000,000 minor units stored")
        // The alert rules still run for every cabinet: h-2's status cannot stop them.
        let checks = try rig.query("SELECT listened FROM listening")
        try rig.waitUntil("another alert check", timeout: 20) { try rig.query("SELECT listened FROM listening") != checks }
        #expect(!rig.fleet.stderr.contains("alerts not checked"), "\(rig.fleet.stderr.suffix(2000))")
    }

    @Test("a payload over the size cap is refused before it is read, and the cabinets go on")
    func oversized() throws {
        let rig = try Rig("fleet-hostile-size")
        try rig.waitUntilListening()
        let pad = String(repeating: "x", count: 300_000)
        let large = #"{"v":1,"cabinet":"h-1","site":"s1","seq":1,"published":1.0,"event":{"seq":1,"time":1795290000.0,"kind":"decision","pad":"\#(pad)"}}"#
        try rig.publishFile("s1/h-1/event", large)
        try rig.publish("s1/h-1/event", Rig.event("h-1", 2, kind: "decision"))
        try rig.waitUntil("the small one stored", timeout: 20) { try rig.query("SELECT count(*) FROM events WHERE cabinet = 'h-1'") == "1" }
        #expect(try rig.query("SELECT seq FROM events WHERE cabinet = 'h-1'") == "2", "the 300 kB one refused")
        #expect(rig.fleet.isRunning)
    }

    @Test("a cabinet's backlog does not hold another's events back: after the database's return, an honest cabinet's events go in the next batch, not behind a flood of sparse seqs")
    func fairness() throws {
        let rig = try Rig("fleet-hostile-fair", ingest: "{gap_grace_s: 30, ack_interval_s: 0.2}")
        try rig.waitUntilListening()
        try rig.publish("s1/c-1/event", Rig.event("c-1", 1, kind: "decision"))
        try rig.waitUntil("the honest cabinet known", timeout: 20) { try rig.query("SELECT count(*) FROM events") == "1" }
        // The database away: what arrives meanwhile waits in the fleet.
        rig.database.stop()
        // 6,000 events with every other seq from one cabinet, then the honest cabinet's next ones.
        let lines = stride(from: 2, through: 12_000, by: 2).map { seq in
            #"{"v":1,"cabinet":"h-5","site":"s1","seq":\#(seq),"published":1.0,"event":{"seq":\#(seq),"time":\#(1795290000 + seq),"kind":"decision"}}"#
        }
        let flood = try rig.publishLines("s1/h-5/event", lines)
        #expect(flood.wait(timeout: 60) == 0, "mosquitto_pub: \(flood.stderr)")
        for seq in Int64(2)...4 { try rig.publish("s1/c-1/event", Rig.event("c-1", seq, kind: "decision")) }
        // Every message taken by the fleet before the database returns (1 + 6,000 + 3): what
        // this asks is the order of the batches, not how soon the broker hands them over. Under
        // CI's load the honest events were once still on their way when the flood's first batch
        // committed, and its second started before them.
        try rig.waitUntil("the fleet to take all 6,004 messages", timeout: 60) { (rig.metric("coinmech_fleet_messages_taken_total") ?? 0) >= 6_004 }
        try rig.database.start()
        try rig.waitUntil("the honest cabinet's events stored", timeout: 60) { try rig.query("SELECT count(*) FROM events WHERE cabinet = 'c-1'") == "4" }
        // Batches share their `received`: how many batches of the flood went in before the honest one.
        let ahead = try rig.query("""
            SELECT count(DISTINCT received) FROM events WHERE cabinet = 'h-5'
            AND received < (SELECT max(received) FROM events WHERE cabinet = 'c-1')
            """)
        #expect((Int(ahead) ?? 99) <= 1, "\(ahead) batches of the flood went in before the honest cabinet's events (at most the one in hand when the database went away)")
        #expect(rig.fleet.isRunning)
    }

    @Test("a flood while the database is down does not grow the fleet: the inbox is bounded, and the broker holds the rest of the session")
    func floodWhileDatabaseDown() throws {
        let rig = try Rig("fleet-hostile-flood")
        try rig.waitUntilListening()
        try rig.publish("s1/c-1/event", Rig.event("c-1", 1, kind: "decision"))
        try rig.waitUntil("the fleet at work", timeout: 20) { try rig.query("SELECT count(*) FROM events") == "1" }
        let baseline = rig.fleetResident
        rig.database.stop()
        // 100 MB: 100,000 events of 1 kB from one cabinet.
        let pad = String(repeating: "x", count: 900)
        let flood = try rig.publishLines("s1/h-6/event", (1...100_000).map { seq in
            #"{"v":1,"cabinet":"h-6","site":"s1","seq":\#(seq),"published":1.0,"event":{"seq":\#(seq),"time":\#(1795290000 + seq),"kind":"decision","pad":"\#(pad)"}}"#
        })
        var peak = baseline
        let until = Date().addingTimeInterval(120)
        while flood.isRunning, Date() < until {
            peak = max(peak, rig.fleetResident)
            usleep(200_000)  // the sampling's pace
        }
        for _ in 0..<25 {
            peak = max(peak, rig.fleetResident)
            usleep(200_000)
        }
        let grown = peak - baseline
        print("fleet resident: \(baseline / 1_048_576) MB before, \(peak / 1_048_576) MB at most while the database was down under a 100 MB flood")
        #expect(grown < 96 << 20, "the fleet grew by \(grown / 1_048_576) MB under a 100 MB flood")
        try rig.database.start()
        try rig.publish("s1/c-1/event", Rig.event("c-1", 2, kind: "decision"))
        try rig.waitUntil("the honest cabinet's next event stored", timeout: 90) { try rig.query("SELECT count(*) FROM events WHERE cabinet = 'c-1'") == "2" }
        #expect(rig.fleet.isRunning)
    }
}
