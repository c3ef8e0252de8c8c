import CoinMechHarness
import CoinMechProtocol
@testable import CoinMechTestSupport
import Foundation
import Testing

/// A cabinet's reply declaring seqs missing while a batch of its events is still in its
/// transaction (F8 beside the writers): the batch's upsert wrote the contiguous seq it knew,
/// below what the declared range settled, and the database's `cabinets` row (the dashboard's
/// figure) stayed behind the fleet's own until the cabinet's next event.
@Suite("Fleet: a range declared missing while its cabinet's batch is in flight", .serialized)
struct FleetMissingRangeTests {
    typealias Rig = FleetEndToEndTests.Rig

    @Test("the database's contiguous seq reaches what the fleet holds, not the lower one the batch in flight wrote")
    func declaredDuringBatch() throws {
        let rig = try Rig("fleet-missing-race")
        let commands = try rig.subscribe("s1/l-1/cmd/#")
        defer { commands.signal(SIGTERM); _ = commands.wait(timeout: 10) }
        try rig.waitUntilListening()
        func contiguous() throws -> String { try rig.query("SELECT contiguous_seq FROM cabinets WHERE cabinet = 'l-1'") }

        for seq in Int64(1)...10 { try rig.publish("s1/l-1/event", Rig.event("l-1", seq, kind: "decision")) }
        try rig.waitUntil("seqs 1…10 stored", timeout: 20) { try contiguous() == "10" }
        // 31 is held above the hole 11…30, which the fleet asks the cabinet to resend.
        try rig.publish("s1/l-1/event", Rig.event("l-1", 31, kind: "decision"))
        var asked: String?
        let askedBy = Date().addingTimeInterval(20)
        while asked == nil, Date() < askedBy, let line = commands.readLine(timeout: askedBy.timeIntervalSinceNow) {
            let command = JSON.parse(String(line.split(separator: " ", maxSplits: 1).last ?? ""))
            if line.hasPrefix("coinmech/v1/s1/l-1/cmd/resend "), command?["args"]?["from"]?.int == 11, command?["args"]?["to"]?.int == 30 {
                asked = command?["id"]?.string
            }
        }
        guard let id = asked else { throw TestFailure("no resend of 11…30 asked: \(rig.fleet.stderr.suffix(2000))") }

        // The cabinet's row locked by another session: the batch that brings 11 waits in its
        // transaction, on its last statement (the cabinets' upsert).
        let holder = try rig.database.session(database: "coinmech_fleet")
        try holder.send("BEGIN; SELECT cabinet FROM cabinets WHERE cabinet = 'l-1' FOR UPDATE;")
        guard holder.readLine(timeout: 20) == "l-1" else { throw TestFailure("the row lock was not taken") }
        try rig.publish("s1/l-1/event", Rig.event("l-1", 11, kind: "decision"))
        try rig.waitUntil("the batch bringing 11 waiting for the row", timeout: 20) {
            try rig.query("""
                SELECT count(*) FROM pg_stat_activity WHERE datname = 'coinmech_fleet' AND wait_event_type = 'Lock'
                AND query LIKE '%INSERT INTO cabinets (cabinet, site, first_seen, contiguous_seq)%'
                """) == "1"
        }
        // Meanwhile the cabinet answers the resend: 11 was sent, 12…30 its ledger does not hold.
        try rig.publish("s1/l-1/reply/\(id)", #"{"v":1,"cabinet":"l-1","site":"s1","id":"\#(id)","cmd":"resend","time":1.0,"ok":true,"result":{"from":11,"to":30,"resent":1,"missing":[[12,30]]}}"#)
        try rig.waitUntil("12…30 recorded missing", timeout: 20) { try rig.query("SELECT count(*) FROM missing_events WHERE cabinet = 'l-1'") == "1" }
        #expect(try contiguous() == "10", "nothing settled yet: 11 is still in its transaction")
        #expect(holder.close() == 0)

        // 11 stored, 12…30 missing, 31 stored: 1…31 settled, in the fleet and in its database.
        try rig.waitUntil("the database's contiguous seq at 31", timeout: 20) { try contiguous() == "31" }
        #expect(try rig.query("SELECT count(*) FROM events WHERE cabinet = 'l-1'") == "12")
        #expect(rig.fleet.isRunning, "coinmech-fleet died: \(rig.fleet.stderr.suffix(3000))")
    }
}
