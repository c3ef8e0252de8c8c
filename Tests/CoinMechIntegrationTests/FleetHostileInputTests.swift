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
        try rig.waitUntil("the schema", timeout: 30) { try rig.query("SELECT count(*) FROM schema_migrations") == Rig.schemaSteps }
        func event(_ seq: String) -> String {
            #"{"v":1,"cabinet":"h-1","site":"s1","seq":\#(seq),"published":1.0,"event":{"seq":\#(seq),"time":1795290000.0,"kind":"decision"}}"#
        }
        // The contract's last seq, and three beyond it.
        for seq in ["9007199254740991", "9007199254740992", "9007199254740993", "9223372036854775807"] { try rig.publish("s1/h-1/event", event(seq)) }
        try rig.waitUntil("the last seq of the contract stored", timeout: 20) { try rig.query("SELECT count(*) FROM events WHERE cabinet = 'h-1'") == "1" }
        // Every hole it is asked for, it says is missing: before seqs were bounded, the fleet
        // then counted past Int64.max and died of a trap (SIGILL), at every restart.
        let answered = try Self.answerResendsMissing(rig, cabinet: "h-1", commands: commands, seconds: 8)
        #expect(answered >= 1, "no resend was asked: \(rig.fleet.stderr.suffix(2000))")
        #expect(rig.fleet.isRunning, "coinmech-fleet died: \(rig.fleet.stderr.suffix(3000))")
        try rig.waitUntil("everything below the last seq settled as missing", timeout: 20) {
            try rig.query("SELECT contiguous_seq FROM cabinets WHERE cabinet = 'h-1'") == "9007199254740991"
        }
        #expect(try rig.query("SELECT max(seq) FROM events WHERE cabinet = 'h-1'") == "9007199254740991", "nothing beyond 2^53 − 1 stored")
        #expect(rig.fleet.stderr.contains("beyond the contract's range"))
        try rig.crashFleet()
        let again = try Self.answerResendsMissing(rig, cabinet: "h-1", commands: commands, seconds: 4)
        #expect(again == 0, "nothing left to ask for")
        #expect(rig.fleet.isRunning, "coinmech-fleet died after its restart: \(rig.fleet.stderr.suffix(3000))")
        commands.signal(SIGTERM)
    }
}
