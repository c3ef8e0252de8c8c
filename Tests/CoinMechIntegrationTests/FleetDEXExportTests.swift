import CoinMechHarness
@testable import CoinMechTestSupport
import Foundation
import Testing

/// The EVA-DTS export end to end: a cabinet's events through mosquitto into coinmech-fleet and a
/// real PostgreSQL, then `coinmech-fleet export dex` and the cabinet page's download, their
/// fields checked against the events stored (docs/FLEET.md, "DEX export").
@Suite("Fleet DEX export: the stored events' figures in the file, from the command and the dashboard; bad input refused", .serialized)
struct FleetDEXExportTests {
    /// 2026-11-01 00:00:00 UTC (`date -u -d 2026-11-01 +%s`): the period is that day.
    static let day = 1_793_491_200.0

    /// One stored event as the test knows it: the ground truth the export is checked against.
    struct Stored {
        var time: Double
        var kind: String
        var json: String
        var value: Int64 = 0
        var tube = false
        var paid: Int64 = 0
    }

    /// Coins before, in and after the period (to a tube, to the cash box, from a mech that has no
    /// tubes), a coin the mech returned, a payout, jams and a lost source.
    static func history() -> [Stored] {
        var out: [Stored] = []
        func add(_ time: Double, _ kind: String, _ fields: String, value: Int64 = 0, tube: Bool = false, paid: Int64 = 0) {
            out.append(Stored(time: time, kind: kind, json: fields, value: value, tube: tube, paid: paid))
        }
        func coin(_ time: Double, _ value: Int64, routing: String?) {
            let detail = routing.map { #","detail":{"routing":"\#($0)","coin_id":"USD\#(value)"}"# } ?? ""
            add(time, "decision", #""verdict":"accept","currency":"USD","denomination":"USD_\#(value)","value_minor":\#(value)\#(detail)"#)
            add(time + 0.5, "coin", #""ref_seq":\#(out.count),"currency":"USD","denomination":"USD_\#(value)","value_minor":\#(value)"#, value: value, tube: routing == "tube")
        }
        coin(day - 5000, 25, routing: nil)
        coin(day - 4000, 100, routing: "tube")
        add(day - 3000, "mech_status", #""detail":{"status":"jam"}"#)
        add(day - 2900, "mech_status", #""detail":{"status":"ok"}"#)
        add(day - 2000, "source_lost", #""source":"mdb","detail":{"device":"/dev/ttyACM0","reason":"gone"}"#)
        add(day - 1900, "source_connected", #""source":"mdb","detail":{"device":"/dev/ttyACM0"}"#)
        add(day - 1000, "acceptor_identified", #""source":"cctalk","detail":{"manufacturer":"CMS","product":"CoinSim 2","serial_number":"SIM-7","software":"12"}"#)
        coin(day + 100, 100, routing: "tube")
        coin(day + 200, 25, routing: "cash_box")
        coin(day + 300, 10, routing: nil)
        add(day + 400, "decision", #""verdict":"accept","currency":"USD","denomination":"USD_50","value_minor":50"#)
        add(day + 400.5, "coin_returned", #""ref_seq":\#(out.count),"currency":"USD","denomination":"USD_50","value_minor":50"#)
        add(day + 500, "payout_requested", #""detail":{"request_id":"r-1","amount_minor":"35","currency":"USD","plan":"1×USD25 1×USD10"}"#)
        add(day + 501, "payout_done", #""detail":{"request_id":"r-1","paid_minor":"35","debt_minor":"0"}"#, paid: 35)
        add(day + 600, "mech_status", #""detail":{"status":"JAM"}"#)
        add(day + 700, "source_lost", #""source":"mdb","detail":{"device":"/dev/ttyACM0","reason":"gone"}"#)
        add(day + 800, "source_connected", #""source":"mdb","detail":{"device":"/dev/ttyACM0"}"#)
        coin(day + 86400, 25, routing: "tube")
        return out
    }

    /// G85's CRC-16 (x¹⁶ + x¹⁵ + x² + 1, reflected, initial 0), bit by bit, apart from the
    /// fleet's own, as four upper-case hex digits.
    static func crc16(_ text: String) -> String {
        var crc: UInt16 = 0
        for byte in text.utf8 {
            crc ^= UInt16(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
        }
        let hex = String(crc, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - hex.count) + hex
    }

    /// A `coinmech-fleet` command to its end: exit status, standard output, standard error.
    static func fleet(_ arguments: [String]) throws -> (status: Int32?, out: String, err: String) {
        let run = try ChildProcess("coinmech-fleet", arguments)
        let out = String(decoding: run.readToEnd(), as: UTF8.self)
        let status = run.wait(timeout: 60)
        return (status, out, run.stderr)
    }

    @Test("the file's CA3, CA4, CA1, EA2 and EA3 are the stored events' figures; the dashboard serves the same file behind its login; bad input is refused with a reason")
    func export() throws {
        let rig = try FleetEndToEndTests.Rig("fleet-dex", databaseOptions: ", timeout_s: 2")
        try rig.waitUntilListening()
        let history = Self.history()
        for (index, event) in history.enumerated() {
            let seq = index + 1
            try rig.publish("s1/c-dex/event", #"{"v":1,"cabinet":"c-dex","site":"s1","seq":\#(seq),"published":1.0,"event":{"seq":\#(seq),"time":\#(event.time),"kind":"\#(event.kind)",\#(event.json)}}"#)
        }
        try rig.waitUntil("every event stored", timeout: 30) { try rig.query("SELECT count(*) FROM events WHERE cabinet = 'c-dex'") == "\(history.count)" }

        // The ground truth, from what was stored.
        let inPeriod = history.filter { $0.time >= Self.day && $0.time < Self.day + 86400 }, before = history.filter { $0.time < Self.day + 86400 }
        func money(_ events: [Stored], _ keep: (Stored) -> Bool = { _ in true }) -> Int64 { events.filter { $0.kind == "coin" && keep($0) }.reduce(0) { $0 + $1.value } }
        let jams = { (events: [Stored]) in events.filter { $0.kind == "mech_status" && $0.json.uppercased().contains(#""STATUS":"JAM""#) }.count }
        let lost = { (events: [Stored]) in events.filter { $0.kind == "source_lost" }.count }
        let expected = [
            "ID1*c-dex***s1",
            "ID4*2**USD",
            "CA1*SIM-7*CoinSim 2*12",
            "CA3*\(money(inPeriod))*\(money(inPeriod) { !$0.tube })*\(money(inPeriod) { $0.tube })**\(money(before))*\(money(before) { !$0.tube })*\(money(before) { $0.tube })",
            "CA4*\(inPeriod.reduce(0) { $0 + $1.paid })**\(before.reduce(0) { $0 + $1.paid })",
            "EA2*EAG*\(jams(inPeriod))*\(jams(before))**1",
            "EA2*EAR*\(lost(inPeriod))*\(lost(before))**0",
            "EA3**20261102*000000**20261101*000000",
        ]
        // The figures written out, as a reader checks them: 1.35 in (1.00 to a tube), 0.35 out.
        #expect(expected[3] == "CA3*135*35*100**260*60*200" && expected[4] == "CA4*35**35" && expected[5] == "EA2*EAG*1*2**1" && expected[6] == "EA2*EAR*1*2**0")

        let dir = rig.dir, config = ["--config", "\(dir)/fleet.yaml"]
        let run = try Self.fleet(["export", "dex", "--cabinet", "c-dex", "--from", "2026-11-01", "--to", "2026-11-02"] + config)
        #expect(run.status == 0, "export dex: \(run.err)")
        let lines = run.out.components(separatedBy: "\r\n")
        #expect(lines.first == "DXS*CMF0000001*VA*V0/6*1" && lines.last == "" && lines.dropLast().last == "DXE*1*1")
        #expect(Array(lines.dropFirst(2).prefix(expected.count)) == expected, "\(run.out)")
        // G85 over ST … the line before it; SE counts ST to SE.
        let set = lines[1..<(lines.count - 4)]
        #expect(lines[lines.count - 4] == "G85*\(Self.crc16(set.map { $0 + "\r\n" }.joined()))")
        #expect(lines[lines.count - 3] == "SE*\(set.count + 2)*0001")

        let output = "\(dir)/c-dex.dex"
        #expect(try Self.fleet(["export", "dex", "--cabinet", "c-dex", "--from", "2026-11-01", "--to", "2026-11-02", "--output", output] + config).status == 0)
        #expect(try String(contentsOfFile: output, encoding: .ascii) == run.out)

        // Bad input: a clear reason on standard error, nothing on standard output, exit 1.
        for (arguments, reason) in [(["--cabinet", "c-404", "--from", "2026-11-01", "--to", "2026-11-02"], "never heard of cabinet 'c-404'"),
                                    (["--cabinet", "c-dex", "--from", "2026-11-02", "--to", "2026-11-01"], "the period is empty"),
                                    (["--cabinet", "c-dex", "--from", "2026-11-01", "--to", "2026-11-01"], "the period is empty"),
                                    (["--cabinet", "c-dex", "--from", "1 Nov", "--to", "2026-11-02"], "the start '1 Nov' is not a date"),
                                    (["--cabinet", "c-dex", "--from", "2026-11-01", "--to", "2026-02-30"], "the end '2026-02-30' is not a date"),
                                    (["--cabinet", "c-dex", "--from", "2026-11-01", "--to", "2026-11-02", "--currency", "usd"], "not an ISO 4217 code")] {
            let refused = try Self.fleet(["export", "dex"] + arguments + config)
            #expect(refused.status == 1 && refused.out.isEmpty && refused.err.contains(reason), "\(arguments): \(refused.status.map(String.init) ?? "?") \(refused.err)")
        }
        // A database nobody answers on: the call's deadline (timeout_s), then the reason.
        let closed = try Loopback.freePort()
        try String(contentsOfFile: "\(dir)/fleet.yaml", encoding: .utf8)
            .replacingOccurrences(of: "socket_dir: \(rig.database.socketDirectory), port: \(rig.database.port)", with: "host: 127.0.0.1, port: \(closed)")
            .write(toFile: "\(dir)/away.yaml", atomically: true, encoding: .utf8)
        let away = try Self.fleet(["export", "dex", "--cabinet", "c-dex", "--from", "2026-11-01", "--to", "2026-11-02", "--config", "\(dir)/away.yaml"])
        #expect(away.status == 1 && away.out.isEmpty && away.err.contains("cannot read the database coinmech_fleet"), "\(away.err)")

        // The dashboard: the same file, as a download, only after a login.
        try rig.setOperator("alice", role: "operator", password: "alice-password")
        let http = HTTPProbe(port: rig.httpPort)
        let path = "/cabinet/c-dex/dex?from=2026-11-01&to=2026-11-02"
        #expect(try http.request("GET", path).status == 303, "no file without a login")
        let alice = try rig.login(http, "alice", "alice-password")
        let page = try http.request("GET", "/cabinet/c-dex", cookie: alice)
        #expect(page.status == 200 && page.body.contains(#"href="/cabinet/c-dex/dex?from="#), "the page links its download")
        let download = try http.request("GET", path, cookie: alice)
        #expect(download.status == 200 && download.body == run.out)
        #expect(download.header("content-type")?.hasPrefix("text/plain") == true)
        #expect(download.header("content-disposition") == #"attachment; filename="c-dex_20261101T000000Z_20261102T000000Z.dex""#)
        #expect(try http.request("GET", "/cabinet/c-dex/dex?from=2026-11-02&to=2026-11-01", cookie: alice).status == 400)
        #expect(try http.request("GET", "/cabinet/c-dex/dex?from=soon&to=2026-11-01", cookie: alice).status == 400)
        #expect(try http.request("GET", "/cabinet/c-dex/dex", cookie: alice).status == 400)
        #expect(try http.request("GET", "/cabinet/c-404/dex?from=2026-11-01&to=2026-11-02", cookie: alice).status == 404)
    }
}
