import ArgumentParser
import CoinMechHarness
import CoinMechMQTT
import CoinMechProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `coinmech-bench fleet`: coinmech-fleet under the load of N cabinets, through a real mosquitto
/// into a real PostgreSQL. The generator speaks as N bridges (bridge-format events, QoS 1, a
/// coin every `--interval` seconds per cabinet: its decision and its `coin`), over a few
/// connections; the lag of each event runs from its publish to the fleet's ack that covers it,
/// which the fleet sends only after the commit (acked at every commit here, not paced). Beside
/// it: the CPU the broker, the database and the fleet used, and the database's own floor for the
/// same rows, the fleet's batch insert run directly by psql, with pgbench for reference.
struct FleetBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Fleet service: ingest events/s and lag p50/p99 from publish to commit for N cabinets, against the database's own floor.")

    @Option(help: "Cabinets, comma-separated for several runs (each against a fresh database; default 1000,5000, or 2000 with --saturate).") var cabinets: String?
    @Option(help: "Seconds between two coins of one cabinet.") var interval = 10.0
    @Option(help: "Seconds measured, after the first interval (every cabinet has spoken).") var seconds = 30.0
    @Option(help: "MQTT connections the generator speaks through.") var connections = 4
    @Option(help: "The coinmech-fleet to run (a release build; swift build -c release --product coinmech-fleet).") var fleet: String?
    @Option(help: "Rows the database's floor inserts, in batches the size of the fleet's mean batch.") var floorRows = 20_000
    @Option(help: "Seconds of pgbench's 100-row inserts, for reference.") var pgbenchSeconds = 10
    @Flag(help: "Print one JSON object per run instead of a table.") var json = false
    @Flag(help: "The ingest at saturation: a backlog queued in the broker while the fleet is stopped, then timed as the fleet drains it, against the database's floor for the same batches.") var saturate = false
    @Option(help: "Events in the backlog (--saturate), spread over the cabinets.") var backlog = 200_000
    @Option(help: "The fleet's ingest.writers (its default when left out).") var writers: Int?

    func run() throws {
        let counts = (cabinets ?? (saturate ? "2000" : "1000,5000")).split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 }) else { throw ValidationError("--cabinets: give counts like 1000,5000") }
        guard interval > 0, seconds > 0, connections > 0 else { throw ValidationError("--interval, --seconds and --connections must be above 0") }
        guard floorRows > 0, pgbenchSeconds > 0 else { throw ValidationError("--floor-rows and --pgbench-seconds must be above 0") }
        guard !saturate || counts.allSatisfy({ backlog >= $0 }) else { throw ValidationError("--backlog must give every cabinet an event at least") }
        let fleetPath = fleet ?? "\(executableDirectory())/coinmech-fleet"
        guard FileManager.default.isExecutableFile(atPath: fleetPath) else {
            throw ValidationError("\(fleetPath) not found: swift build -c release --product coinmech-fleet, or pass --fleet")
        }
        for count in counts {
            let load = FleetLoad(cabinets: count, interval: interval, seconds: seconds, connections: connections, fleet: fleetPath,
                                 floorRows: floorRows, pgbenchSeconds: pgbenchSeconds, writers: writers)
            let result = try load.run(backlog: saturate ? backlog : nil)
            if json {
                print(String(decoding: try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]), as: UTF8.self))
            } else if saturate {
                let r = result
                print(String(format: "fleet at saturation, %d cabinets: a backlog of %d events drained at %.0f events/s (%d stored, %d missing); batches of %.1f events",
                             count, backlog, r["ingest_events_per_s"] as? Double ?? 0, r["stored"] as? Int ?? 0, r["missing"] as? Int ?? 0, r["mean_batch"] as? Double ?? 0))
                print(String(format: "  CPU (%% of one core): broker %.0f, database %.0f, fleet %.0f",
                             r["broker_cpu_pct"] as? Double ?? 0, r["database_cpu_pct"] as? Double ?? 0, r["fleet_cpu_pct"] as? Double ?? 0))
                print(String(format: "  the database's floor for the same batches: %.0f rows/s (the fleet reached %.2f of it); pgbench, 100-row inserts: %.0f rows/s",
                             r["floor_rows_per_s"] as? Double ?? 0, r["of_floor"] as? Double ?? 0, r["pgbench_rows_per_s"] as? Double ?? 0))
            } else {
                let r = result
                print(String(format: "fleet, %d cabinets, a coin each per %.0f s: offered %.0f events/s, stored %.0f events/s; lag publish → commit p50 %.0f ms, p99 %.0f ms, max %.0f ms; %d of %d published never acked",
                             count, interval, r["offered_events_per_s"] as? Double ?? 0, r["ingest_events_per_s"] as? Double ?? 0,
                             r["lag_p50_ms"] as? Double ?? 0, r["lag_p99_ms"] as? Double ?? 0, r["lag_max_ms"] as? Double ?? 0,
                             r["unacked"] as? Int ?? 0, r["published"] as? Int ?? 0))
                print(String(format: "  CPU (%% of one core): broker %.0f, database %.0f, fleet %.0f; batches of %.1f events",
                             r["broker_cpu_pct"] as? Double ?? 0, r["database_cpu_pct"] as? Double ?? 0, r["fleet_cpu_pct"] as? Double ?? 0,
                             r["mean_batch"] as? Double ?? 0))
                print(String(format: "  the database's floor for the same batches: %.0f rows/s (the fleet reached %.2f of it); pgbench, 100-row inserts: %.0f rows/s",
                             r["floor_rows_per_s"] as? Double ?? 0, r["of_floor"] as? Double ?? 0, r["pgbench_rows_per_s"] as? Double ?? 0))
            }
        }
    }
}

/// One run of the fleet bench: its own database, broker and fleet.
struct FleetLoad {
    let cabinets: Int
    let interval: Double
    let seconds: Double
    let connections: Int
    let fleet: String
    let floorRows: Int
    let pgbenchSeconds: Int
    let writers: Int?

    func run(backlog: Int? = nil) throws -> [String: Any] {
        var template = Array("\(NSTemporaryDirectory())/coinmech-bench-fleet-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ValidationError("mkdtemp failed") }
        let dir = String(cString: made)
        chmod(dir, 0o755)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: "\(dir)/postgres", withIntermediateDirectories: true)
        let database: PostgresCluster, broker: MosquittoBroker
        do {
            database = try PostgresCluster(dir: "\(dir)/postgres")
            try database.psql("CREATE DATABASE coinmech_fleet", database: "postgres")
            broker = try MosquittoBroker(dir: dir, autosave: 30)
        } catch { throw ValidationError("\(error)") }
        defer {
            broker.kill()
            database.stop()
        }
        try """
            instance: bench
            mqtt: {host: 127.0.0.1, port: \(broker.port), client_id: coinmech-fleet-bench, max_inflight: 1000, tls: off}
            database: {socket_dir: \(database.socketDirectory), port: \(database.port), user: postgres, name: coinmech_fleet}
            http: {listen: off}
            ingest: {ack_interval_s: 0, gap_grace_s: 60\(writers.map { ", writers: \($0)" } ?? "")}
            alerts: {check_s: 10}
            """.write(toFile: "\(dir)/fleet.yaml", atomically: true, encoding: .utf8)
        var service = try ChildProcess(path: fleet, ["run", "--config", "\(dir)/fleet.yaml"], stderrPath: "\(dir)/fleet.log")
        defer { service.signal(SIGTERM); _ = service.wait(timeout: 20) }
        // The acks come back on a link of their own.
        let watcher = try MQTTLink(.init(clientID: "bench-acks", host: "127.0.0.1", port: broker.port, keepalive: 30, maxInflight: 100, will: nil,
                                         subscriptions: ["coinmech/v1/+/+/ack"], tls: nil))
        watcher.start()
        defer { watcher.stop() }
        var links: [MQTTLink] = []
        for index in 0..<connections {
            let link = try MQTTLink(.init(clientID: "bench-\(index)", host: "127.0.0.1", port: broker.port, keepalive: 30, maxInflight: 1000, will: nil,
                                          subscriptions: [], tls: nil))
            link.start()
            links.append(link)
        }
        defer { for link in links { link.stop() } }
        var admitted = Set<Int>()
        let connectDeadline = Date().addingTimeInterval(20)
        while admitted.count < links.count + 1 {
            for (index, link) in (links + [watcher]).enumerated() {
                for case .connected(0, let generation) in link.take() {
                    link.admit(generation)
                    admitted.insert(index)
                }
            }
            guard Date() < connectDeadline else { throw ValidationError("the generator could not connect to mosquitto") }
            usleep(10_000)
        }
        try waitUntilStoring(fleet: service, via: links[0], acks: watcher, log: "\(dir)/fleet.log")
        if let backlog {
            return try drain(backlog: backlog, fleet: &service, links: links, database: database, broker: broker, dir: dir)
        }

        // Each cabinet's coins at a phase of its own: the decision, then its `coin`.
        var random = SystemRandomNumberGenerator()
        let start = Date().timeIntervalSince1970 + 0.5
        var next = (0..<cabinets).map { _ in start + Double.random(in: 0..<interval, using: &random) }
        var seq = Array(repeating: Int64(0), count: cabinets)
        var waiting = Array(repeating: [(seq: Int64, published: Double)](), count: cabinets)
        var order = Array(0..<cabinets).sorted { next[$0] < next[$1] }
        var cursor = 0
        var lags: [Double] = []
        var published = 0, acked = 0
        let measureFrom = start + interval, measureTo = measureFrom + seconds
        var cpuStart: [String: Double] = [:], cpuEnd: [String: Double] = [:]
        var storedAtStart = 0, storedAtEnd = 0
        let index = Dictionary(uniqueKeysWithValues: (0..<cabinets).map { (Self.name($0), $0) })
        func stored() -> Int { Int((try? database.psql("SELECT count(*) FROM events", database: "coinmech_fleet")) ?? "") ?? 0 }
        while true {
            let now = Date().timeIntervalSince1970
            if cpuStart.isEmpty, now >= measureFrom {
                cpuStart = cpu(broker: broker, database: database, fleet: service)
                storedAtStart = stored()
            }
            if now >= measureTo { break }
            // Everything due, in time order.
            while now >= next[order[cursor]] {
                let c = order[cursor]
                for kind in ["decision", "coin"] {
                    seq[c] += 1
                    let t = Date().timeIntervalSince1970
                    let body = kind == "decision"
                        ? #""verdict":"accept","state":"pending""#
                        : #""ref_seq":\#(seq[c] - 1),"message":"stored""#
                    let payload = Self.event(c, seq: seq[c], kind: kind, time: t, body: body)
                    guard links[c % links.count].publish("coinmech/v1/\(Self.site(c))/\(Self.name(c))/event", payload) != nil else {
                        throw ValidationError("the generator lost its broker connection")
                    }
                    waiting[c].append((seq[c], t))
                    published += 1
                }
                next[c] += interval
                cursor += 1
                if cursor == cabinets {
                    order.sort { next[$0] < next[$1] }
                    cursor = 0
                }
            }
            for link in links { _ = link.take() }
            readAcks()
            usleep(500)
        }
        cpuEnd = cpu(broker: broker, database: database, fleet: service)
        storedAtEnd = stored()
        // Every event published is waited for (30 s at most): the last ones' lags count too,
        // and one never acked is one the fleet did not store.
        let drainBy = Date().addingTimeInterval(30)
        while acked < published, Date() < drainBy {
            for link in links { _ = link.take() }
            readAcks()
            usleep(1_000)
        }

        /// The acks come in: each covers its cabinet's events up to its seq.
        func readAcks() {
            for case .message(let topic, let payload, _) in watcher.take() {
                let received = Date().timeIntervalSince1970
                let levels = topic.split(separator: "/")
                guard levels.count == 5, let c = index[String(levels[3])], let ack = JSON.parse(String(decoding: payload, as: UTF8.self))?["seq"]?.int else { continue }
                while let first = waiting[c].first, first.seq <= ack {
                    if first.published >= measureFrom, first.published < measureTo { lags.append(received - first.published) }
                    waiting[c].removeFirst()
                    acked += 1
                }
            }
        }
        // Each batch's rows share its `received`: the mean batch the fleet committed in the window.
        let meanBatch = Double((try? database.psql("""
            SELECT round(count(*)::numeric / greatest(count(DISTINCT received), 1), 1) FROM events WHERE received >= \(measureFrom) AND received < \(measureTo)
            """, database: "coinmech_fleet")) ?? "") ?? 1
        let floor = try self.floor(database, batch: max(1, Int(meanBatch.rounded())), dir: dir)
        lags.sort()
        func p(_ q: Double) -> Double { lags.isEmpty ? 0 : lags[min(lags.count - 1, Int(Double(lags.count) * q))] * 1000 }
        let ingest = Double(storedAtEnd - storedAtStart) / seconds
        let pct = { (key: String) in ((cpuEnd[key] ?? 0) - (cpuStart[key] ?? 0)) / seconds * 100 }
        return [
            "cabinets": cabinets, "interval_s": interval, "seconds": seconds, "connections": connections,
            "offered_events_per_s": Double(cabinets) * 2 / interval, "ingest_events_per_s": ingest,
            "lag_p50_ms": p(0.5), "lag_p99_ms": p(0.99), "lag_max_ms": (lags.last ?? 0) * 1000, "lag_samples": lags.count,
            "published": published, "acked": acked, "unacked": published - acked,
            "broker_cpu_pct": pct("broker"), "database_cpu_pct": pct("database"), "fleet_cpu_pct": pct("fleet"),
            "mean_batch": meanBatch, "floor_rows_per_s": floor.rows, "of_floor": floor.rows > 0 ? ingest / floor.rows : 0,
            "pgbench_rows_per_s": floor.pgbench,
        ]
    }

    /// The fleet is ready when it has stored an event and acked it: a probe cabinet's first event,
    /// sent again each second until its ack comes back (QoS 1 messages sent before the fleet's
    /// session subscribed are not kept for it). Asking the fleet itself, rather than counting its
    /// schema's steps, keeps the bench right whatever the schema becomes.
    func waitUntilStoring(fleet: ChildProcess, via link: MQTTLink, acks: MQTTLink, log: String) throws {
        let deadline = Date().addingTimeInterval(60)
        var sent = Date.distantPast
        while true {
            guard fleet.isRunning else { throw ValidationError("coinmech-fleet stopped at start: see \(log)") }
            guard Date() < deadline else { throw ValidationError("coinmech-fleet stored no probe event within 60 s: see \(log)") }
            if Date().timeIntervalSince(sent) >= 1 {
                let t = Date().timeIntervalSince1970
                let payload = #"{"v":1,"cabinet":"\#(Self.probe)","site":"site-probe","seq":1,"published":\#(t),"event":{"seq":1,"time":\#(t),"kind":"decision","source":"serial","epoch":1,"device_seq":1,"currency":"USD","denomination":"quarter","value_minor":25,"link":"usd","chain_generation":1,"verdict":"accept","state":"pending"}}"#
                guard link.publish("coinmech/v1/site-probe/\(Self.probe)/event", payload) != nil else {
                    throw ValidationError("the generator lost its broker connection")
                }
                sent = Date()
            }
            _ = link.take()
            for case .message(let topic, let payload, _) in acks.take()
            where topic.split(separator: "/").dropFirst(3).first == Substring(Self.probe) && JSON.parse(String(decoding: payload, as: UTF8.self))?["seq"]?.int == 1 {
                return
            }
            usleep(10_000)
        }
    }

    /// A bridge-format event of cabinet `c` (docs/FLEET.md, "event").
    static func event(_ c: Int, seq: Int64, kind: String, time t: Double, body: String) -> String {
        #"{"v":1,"cabinet":"\#(name(c))","site":"\#(site(c))","seq":\#(seq),"published":\#(t),"event":{"seq":\#(seq),"time":\#(t),"kind":"\#(kind)","source":"serial","epoch":1,"device_seq":\#((seq + 1) / 2),"currency":"USD","denomination":"quarter","value_minor":25,"link":"usd","chain_generation":1,\#(body)}}"#
    }

    static let probe = "probe"
    static func name(_ c: Int) -> String { String(format: "b-%05d", c) }
    static func site(_ c: Int) -> String { "site-\(c % 50)" }

    /// CPU seconds so far of the broker, the database (the postmaster and its backends) and the fleet.
    func cpu(broker: MosquittoBroker, database: PostgresCluster, fleet: ChildProcess?) -> [String: Double] {
        var out: [String: Double] = [:]
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var byParent: [pid_t: [pid_t]] = [:]
        var times: [pid_t: Double] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let parent = pid_t(fields[1]), let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
            byParent[parent, default: []].append(pid)
            times[pid] = (user + system) / ticks
        }
        out["broker"] = broker.process.flatMap { times[$0.pid] } ?? 0
        out["fleet"] = fleet.flatMap { times[$0.pid] } ?? 0
        if let postmaster = database.server?.pid {
            out["database"] = ([postmaster] + (byParent[postmaster] ?? [])).reduce(0) { $0 + (times[$1] ?? 0) }
        }
        return out
    }

    /// The fleet's own batch insert, as one statement per batch in its own transaction, run by
    /// psql into the events table: rows per second. And pgbench's 100-row inserts.
    func floor(_ database: PostgresCluster, batch: Int, dir: String) throws -> (rows: Double, pgbench: Double) {
        let statements = max(1, floorRows / batch)
        // Into `events` itself, beside the rows the fleet stored: the same table, indexes and
        // size (a fresh copy of the table ran about 5 % faster beside 200,000 stored rows).
        var sql = ""
        var n = 0
        for _ in 0..<statements {
            var cabinets: [String] = [], seqs: [String] = [], events: [String] = []
            for _ in 0..<batch {
                n += 1
                cabinets.append("floor-\(n % 5000)")
                seqs.append("\(n)")
                events.append(#""{\"v\":1,\"cabinet\":\"f\",\"site\":\"s\",\"seq\":\#(n),\"published\":1795290000.5,\"event\":{\"seq\":\#(n),\"time\":1795290000.5,\"kind\":\"coin\",\"source\":\"serial\",\"currency\":\"USD\",\"denomination\":\"quarter\",\"value_minor\":25,\"ref_seq\":1,\"message\":\"stored\"}}""#)
            }
            sql += """
                INSERT INTO events (cabinet, seq, kind, time, received, event)
                SELECT c, s, 'coin', 1795290000.5, 1795290001, e::jsonb->'event' FROM unnest('{\(cabinets.joined(separator: ","))}'::text[], '{\(seqs.joined(separator: ","))}'::bigint[], '{\(events.joined(separator: ","))}'::text[]) AS b(c, s, e)
                ON CONFLICT (cabinet, seq) DO NOTHING;

                """
        }
        try sql.write(toFile: "\(dir)/floor.sql", atomically: true, encoding: .utf8)
        let began = Date()
        let psql = try ChildProcess(path: "/usr/bin/psql", ["-X", "-q", "-h", database.socketDirectory, "-p", "\(database.port)", "-U", "postgres", "-d", "coinmech_fleet",
                                                           "-v", "ON_ERROR_STOP=1", "-f", "\(dir)/floor.sql"], stderrPath: "\(dir)/floor.log")
        _ = psql.readToEnd()
        guard psql.wait(timeout: 600) == 0 else { throw ValidationError("the floor's inserts failed: see \(dir)/floor.log") }
        let rows = Double(statements * batch) / Date().timeIntervalSince(began)
        try "INSERT INTO pgb SELECT g + :client_id * 1000000000 + (random() * 1e8)::bigint * 100 FROM generate_series(1, 100) g ON CONFLICT DO NOTHING;\n"
            .write(toFile: "\(dir)/pgbench.sql", atomically: true, encoding: .utf8)
        _ = try? database.psql("CREATE TABLE pgb (id bigint PRIMARY KEY)", database: "coinmech_fleet")
        let bench = try ChildProcess(path: "/usr/lib/postgresql/15/bin/pgbench", ["-n", "-c", "2", "-T", "\(pgbenchSeconds)", "-h", database.socketDirectory, "-p", "\(database.port)",
                                                                                  "-U", "postgres", "-f", "\(dir)/pgbench.sql", "coinmech_fleet"], stderrPath: "\(dir)/pgbench.log")
        let output = String(decoding: bench.readToEnd(), as: UTF8.self)
        _ = bench.wait(timeout: Double(pgbenchSeconds) + 60)
        let tps = output.split(separator: "\n").first { $0.hasPrefix("tps = ") }.flatMap { Double($0.dropFirst(6).split(separator: " ").first ?? "") } ?? 0
        return (rows, tps * 100)
    }
}
