import CoinMechHarness
@testable import CoinMechTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// PostgreSQL stopped while the fleet inserts (docs/FLEET.md, crash point 12): the ingest must
/// find its way back by itself, every time, and stop when told.
@Suite("Fleet through database stops: every stop mid-insert recovered by itself; SIGTERM obeyed", .serialized)
struct FleetDatabaseStopTests {
    typealias Rig = FleetEndToEndTests.Rig

    @Test("while PostgreSQL is away, /metrics answers within Prometheus' scrape timeout and says so; the database's figures come back with it")
    func metricsDuringOutage() throws {
        let rig = try Rig("fleet-db-metrics")
        try rig.waitUntilListening()
        try rig.publish("s1/c-1/event", Rig.event("c-1", 1, kind: "decision"))
        try rig.waitUntil("the event stored", timeout: 20) { try rig.query("SELECT count(*) FROM events") == "1" }
        /// A scrape as Prometheus makes it by default: one that takes longer than 10 s fails.
        func scrape() -> String? { try? HTTPProbe(port: rig.httpPort, timeoutSeconds: 10).request("GET", "/metrics").body }
        #expect(scrape()?.contains("coinmech_fleet_alerts_open{") == true)
        rig.database.stop()
        // Each database call now waits out database.timeout_s (15 s) for a database that is
        // away; the alert check, every half second, finds it so. Scrapes that waited for the
        // database's figures took 30 s, so this was never seen.
        try rig.waitUntil("a scrape within 10 s saying the database is down", timeout: 60) {
            scrape()?.contains("coinmech_fleet_database_up 0") == true
        }
        let during = try #require(scrape())
        #expect(during.contains("coinmech_fleet_events_stored_total 1") && !during.contains("coinmech_fleet_alerts_open{"), "\(during)")
        try rig.database.start()
        try rig.waitUntil("the database's figures back", timeout: 60) {
            let text = scrape() ?? ""
            return text.contains("coinmech_fleet_database_up 1") && text.contains("coinmech_fleet_alerts_open{")
        }
        #expect(rig.fleet.isRunning)
    }

    @Test("PostgreSQL stopped mid-insert 10 times in a row, fast and immediate in turn: everything stored within 60 s of its return each time; SIGTERM stops the fleet within 10 s")
    func stopsMidInsert() throws {
        let rig = try Rig("fleet-db-stops")
        try rig.waitUntilListening()
        // Within what the fleet holds for one cabinet while the database is away (2,000 events,
        // FleetLimits.cabinetQueue): beyond, it sheds unacked events for the cabinet's bridge to
        // send again, and mosquitto_pub is no bridge: it never sends anything twice.
        let perStop = 1500
        for stop in 0..<10 {
            // Small events, as fast as mosquitto_pub sends them: many short transactions.
            let publisher = try rig.publishLines("s1/d-1/event", ((stop * perStop + 1)...((stop + 1) * perStop)).map { seq in
                #"{"v":1,"cabinet":"d-1","site":"s1","seq":\#(seq),"published":1.0,"event":{"seq":\#(seq),"time":\#(1795290000 + seq),"kind":"decision"}}"#
            })
            let stored = stop * perStop
            try rig.waitUntil("the inserts under way", timeout: 30) { (Int(try rig.query("SELECT count(*) FROM events")) ?? 0) > stored + 300 }
            if stop % 2 == 0 { rig.database.stop() } else { rig.database.crash() }
            #expect(publisher.wait(timeout: 60) == 0, "mosquitto_pub: \(publisher.stderr)")
            try rig.database.start()
            let total = String((stop + 1) * perStop)
            try rig.waitUntil("stop \(stop + 1) (\(stop % 2 == 0 ? "fast" : "immediate")): all \(total) events stored", timeout: 60) {
                guard rig.fleet.isRunning else { throw TestFailure("coinmech-fleet exited: \(rig.fleet.stderr.suffix(3000))") }
                return try rig.query("SELECT count(*) FROM events") == total
            }
        }
        let began = Date()
        rig.fleet.signal(SIGTERM)
        let status = rig.fleet.wait(timeout: 10)
        #expect(status == 0, "SIGTERM: \(status.map { "exit \($0)" } ?? "still running after 10 s")")
        print("coinmech-fleet stopped \(String(format: "%.1f", Date().timeIntervalSince(began))) s after SIGTERM")
    }

    @Test("systemd's watchdog: READY once the schema is there, WATCHDOG=1 while the ingest turns, PostgreSQL away included (a restart would not bring it back); STOPPING at SIGTERM")
    func watchdog() throws {
        let notify = NotifySocket()
        let rig = try Rig("fleet-watchdog", databaseOptions: ", timeout_s: 1", environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "4000000"])
        try notify.waitFor("READY=1", timeout: 30) { $0.contains { $0.contains("READY=1") } }
        try notify.waitFor("watchdog pings", timeout: 10) { messages in messages.filter { $0.contains("WATCHDOG=1") }.count >= 3 }
        rig.database.stop()
        let before = notify.count("WATCHDOG=1")
        // Longer than the watchdog period, with the ingest waiting on a database that is away.
        notify.observe(seconds: 8)
        #expect(notify.count("WATCHDOG=1") - before >= 3, "pings while PostgreSQL was away: \(notify.count("WATCHDOG=1") - before)")
        try rig.database.start()
        rig.fleet.signal(SIGTERM)
        #expect(rig.fleet.wait(timeout: 10) == 0)
        try notify.waitFor("STOPPING=1", timeout: 5) { $0.contains { $0.contains("STOPPING=1") } }
    }
}
