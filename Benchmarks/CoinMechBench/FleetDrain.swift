import ArgumentParser
import CoinMechHarness
import CoinMechMQTT
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension FleetLoad {
    /// `--saturate`: the ingest with more to do than it can, and nothing else running. The fleet
    /// is stopped (its persistent session stays in the broker, subscribed), `backlog` events are
    /// queued for it (each cabinet's in order, `cabinets` interleaved), and a new fleet process
    /// drains them. Its rate is read from the rows themselves: every batch's rows share their
    /// `received`, so the drain runs from the first batch's commit to the last one's, and the
    /// mean batch is rows over distinct `received`. The floor then inserts the same rows in
    /// batches of that size, on the same database.
    func drain(backlog: Int, fleet service: inout ChildProcess, links: [MQTTLink], database: PostgresCluster, broker: MosquittoBroker, dir: String) throws -> [String: Any] {
        service.signal(SIGTERM)
        guard service.wait(timeout: 30) == 0 else { throw ValidationError("coinmech-fleet did not stop on SIGTERM: see \(dir)/fleet.log") }
        let perCabinet = backlog / cabinets
        let total = perCabinet * cabinets
        let t = Date().timeIntervalSince1970
        var sent = 0
        var acknowledged = 0
        for round in 1...perCabinet {
            for c in 0..<cabinets {
                let kind = round % 2 == 1 ? "decision" : "coin"
                let body = kind == "decision" ? #""verdict":"accept","state":"pending""# : #""ref_seq":\#(round - 1),"message":"stored""#
                guard links[c % links.count].publish("coinmech/v1/\(Self.site(c))/\(Self.name(c))/event", Self.event(c, seq: Int64(round), kind: kind, time: t, body: body)) != nil else {
                    throw ValidationError("the generator lost its broker connection")
                }
                sent += 1
            }
            // Held to what the broker has taken: the generator's queue stays short.
            while sent - acknowledged > 20_000 { acknowledged += confirmations(links) }
        }
        let queuedBy = Date().addingTimeInterval(120)
        while acknowledged < total {
            guard Date() < queuedBy else { throw ValidationError("mosquitto took \(acknowledged) of \(total) events within 120 s") }
            acknowledged += confirmations(links)
        }
        let before = cpu(broker: broker, database: database, fleet: nil)
        service = try ChildProcess(path: fleet, ["run", "--config", "\(dir)/fleet.yaml"], stderrPath: "\(dir)/fleet-drain.log")
        let deadline = Date().addingTimeInterval(600)
        var stored = 0
        while stored < total {
            guard service.isRunning else { throw ValidationError("coinmech-fleet stopped while draining: see \(dir)/fleet-drain.log") }
            guard Date() < deadline else { break }
            usleep(200_000)
            stored = Int((try? database.psql("SELECT count(*) FROM events WHERE cabinet <> '\(Self.probe)'", database: "coinmech_fleet")) ?? "") ?? 0
        }
        let after = cpu(broker: broker, database: database, fleet: service)
        let row = ((try? database.psql("""
            SELECT count(*), min(received), max(received), count(DISTINCT received) FROM events WHERE cabinet <> '\(Self.probe)'
            """, database: "coinmech_fleet")) ?? "").split(separator: "|").map { Double($0) ?? 0 }
        guard row.count == 4, row[3] > 1 else { throw ValidationError("the drain stored too little to time: see \(dir)/fleet-drain.log") }
        let span = row[2] - row[1]
        // The first batch's own commit is outside the span: its rows are left out of the rate.
        let meanBatch = row[0] / row[3]
        let rate = (row[0] - meanBatch) / span
        let floor = try self.floor(database, batch: max(1, Int(meanBatch.rounded())), dir: dir)
        let pct = { (key: String) in ((after[key] ?? 0) - (before[key] ?? 0)) / span * 100 }
        return [
            "cabinets": cabinets, "backlog": total, "stored": Int(row[0]), "missing": total - Int(row[0]), "drain_s": span,
            "ingest_events_per_s": rate, "mean_batch": meanBatch,
            "broker_cpu_pct": pct("broker"), "database_cpu_pct": pct("database"), "fleet_cpu_pct": pct("fleet"),
            "floor_rows_per_s": floor.rows, "of_floor": floor.rows > 0 ? rate / floor.rows : 0, "pgbench_rows_per_s": floor.pgbench,
        ]
    }

    /// The PUBACKs that came back on the generator's links.
    private func confirmations(_ links: [MQTTLink]) -> Int {
        var count = 0
        for link in links {
            for case .published in link.take() { count += 1 }
        }
        if count == 0 { usleep(1_000) }
        return count
    }
}
