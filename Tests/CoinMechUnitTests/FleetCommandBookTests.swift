import CoinMechBridge
import CoinMechProtocol
import Testing

/// The fleet's commands (docs/FLEET.md B11–B15), rule by rule, with the contract's own example
/// payloads where it has one.
@Suite("Fleet commands: allowed ones run once per id, in order, never after their deadline")
struct FleetCommandBookTests {
    static func book(allow: Set<FleetCommand.Name> = [.status, .totals, .resend]) -> FleetCommandBook {
        FleetCommandBook(cabinet: "c-0042", site: "paris-nord", allow: allow, maxAhead: 600)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    static func error(_ outcome: FleetCommandBook.Outcome) -> String? {
        guard case .reply(_, let reply) = outcome, reply["ok"] == false else { return nil }
        return reply["error"]?["code"]?.string
    }

    @Test("a command in the allow-list queues and runs; its reply names the cabinet, the id, the command and who asked")
    func runs() {
        let it = Mutable(Self.book(allow: [.inhibit]))
        let outcome = it.value.receive(name: "inhibit", payload: Self.bytes(#"{"v":1,"id":"5f0c1d9e-7b7a","deadline":1090.0,"args":{"on":true},"by":"alice"}"#),
                                   retained: false, now: 1000)
        #expect(outcome == .queued)
        guard case .run(let command) = it.value.next(now: 1001) else { Issue.record("nothing to run"); return }
        #expect(command.action == .inhibit(true) && command.id == "5f0c1d9e-7b7a" && command.by == "alice")
        #expect(it.value.next(now: 1001) == nil, "one at a time")
        let reply = it.value.finish(command, .success(["inhibited": true, "seq": 1202]), now: 1002)
        #expect(reply["ok"] == true && reply["cabinet"] == "c-0042" && reply["site"] == "paris-nord" && reply["cmd"] == "inhibit"
                && reply["by"] == "alice" && reply["result"]?["seq"] == 1202)
    }

    @Test("B11: a command v1 knows but the allow-list lacks is not_allowed; a name v1 lacks is unknown_command")
    func allowList() {
        let it = Mutable(Self.book())
        #expect(Self.error(it.value.receive(name: "inhibit", payload: Self.bytes(#"{"v":1,"id":"a","deadline":1090,"args":{"on":true}}"#), retained: false, now: 1000)) == "not_allowed")
        #expect(Self.error(it.value.receive(name: "collect", payload: Self.bytes(#"{"v":1,"id":"b","deadline":1090}"#), retained: false, now: 1000)) == "unknown_command")
        #expect(Self.error(it.value.receive(name: "inhibit", payload: Self.bytes(#"{"v":1,"id":"c","deadline":1090,"args":{"on":"maybe"}}"#), retained: false, now: 1000)) == "not_allowed",
                "not allowed whatever its arguments")
        #expect(it.value.isIdle)
    }

    @Test("B12: past its deadline on arrival, or when its turn comes, it is expired and not run; a deadline too far ahead is bad_request")
    func deadline() {
        let it = Mutable(Self.book())
        #expect(Self.error(it.value.receive(name: "status", payload: Self.bytes(#"{"v":1,"id":"late","deadline":999.5}"#), retained: false, now: 1000)) == "expired")
        #expect(Self.error(it.value.receive(name: "status", payload: Self.bytes(#"{"v":1,"id":"far","deadline":1700}"#), retained: false, now: 1000)) == "bad_request")
        #expect(Self.error(it.value.receive(name: "status", payload: Self.bytes(#"{"v":1,"id":"none"}"#), retained: false, now: 1000)) == "bad_request")
        // Past Int once converted to seconds: refused too (it stopped the bridge; coinmech-fuzz-fleet bridge).
        #expect(Self.error(it.value.receive(name: "status", payload: Self.bytes(#"{"v":1,"id":"huge","deadline":1.7e22}"#), retained: false, now: 1000)) == "bad_request")
        // Two queue; the first runs long, and the second's deadline passes while it waits.
        #expect(it.value.receive(name: "status", payload: Self.bytes(#"{"v":1,"id":"one","deadline":1010}"#), retained: false, now: 1000) == .queued)
        #expect(it.value.receive(name: "totals", payload: Self.bytes(#"{"v":1,"id":"two","deadline":1005}"#), retained: false, now: 1000) == .queued)
        guard case .run(let first) = it.value.next(now: 1000) else { Issue.record("nothing to run"); return }
        _ = it.value.finish(first, .success([:]), now: 1008)
        guard case .reply(let id, let reply) = it.value.next(now: 1008) else { Issue.record("the second was not refused"); return }
        #expect(id == "two" && reply["error"]?["code"] == "expired")
        #expect(it.value.isIdle)
    }

    @Test("B13: a repeat of an answered id gets the same reply and does not run; a repeat of one waiting is dropped")
    func oncePerID() {
        let it = Mutable(Self.book())
        let payload = Self.bytes(#"{"v":1,"id":"r1","deadline":1100}"#)
        #expect(it.value.receive(name: "status", payload: payload, retained: false, now: 1000) == .queued)
        if case .ignored = it.value.receive(name: "status", payload: payload, retained: false, now: 1000) {} else { Issue.record("a repeat while waiting was not dropped") }
        guard case .run(let command) = it.value.next(now: 1000) else { Issue.record("nothing to run"); return }
        let reply = it.value.finish(command, .success(["x": 1]), now: 1001)
        #expect(it.value.receive(name: "status", payload: payload, retained: false, now: 1050) == .reply(id: "r1", reply))
        #expect(it.value.next(now: 1050) == nil, "answered from memory, not run again")
        // A refusal is remembered too.
        let denied = Self.bytes(#"{"v":1,"id":"r2","deadline":1100,"args":{"on":true}}"#)
        let first = it.value.receive(name: "inhibit", payload: denied, retained: false, now: 1000)
        #expect(it.value.receive(name: "inhibit", payload: denied, retained: false, now: 1001) == first)
    }

    @Test("B15: a retained command and one without a valid id are ignored, never run")
    func unanswerable() {
        let it = Mutable(Self.book())
        for (payload, retained) in [(#"{"v":1,"id":"ok1","deadline":1100}"#, true), (#"{"v":1,"deadline":1100}"#, false),
                                    (#"{"v":1,"id":"a/b","deadline":1100}"#, false), ("not json", false), (#"[1]"#, false)] {
            guard case .ignored = it.value.receive(name: "status", payload: Self.bytes(payload), retained: retained, now: 1000) else {
                Issue.record("\(payload) retained \(retained) was not ignored")
                continue
            }
        }
        #expect(it.value.isIdle)
    }

    @Test("arguments of the wrong type or range, or unknown ones, are bad_request")
    func arguments() {
        let it = Mutable(Self.book(allow: Set(FleetCommand.Name.allCases)))
        for (name, args) in [("inhibit", #"{}"#), ("inhibit", #"{"on":"yes"}"#), ("resend", #"{}"#), ("resend", #"{"from":0}"#),
                             ("resend", #"{"from":5,"to":4}"#), ("status", #"{"x":1}"#), ("resend", #"[1]"#)] {
            let outcome = it.value.receive(name: name, payload: Self.bytes(#"{"v":1,"id":"x\#(name.count)\#(args.count)","deadline":1100,"args":\#(args)}"#), retained: false, now: 1000)
            #expect(Self.error(outcome) == "bad_request", "\(name) \(args)")
        }
        #expect(Self.error(it.value.receive(name: "status", payload: Self.bytes(#"{"v":2,"id":"v2","deadline":1100}"#), retained: false, now: 1000)) == "bad_request")
        #expect(it.value.receive(name: "resend", payload: Self.bytes(#"{"v":1,"id":"ok","deadline":1100,"args":{"from":5}}"#), retained: false, now: 1000) == .queued)
    }
}

/// A value the test changes from inside `#expect`, whose closure cannot capture a `var`.
final class Mutable<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// `cmd/resend`'s reading and publishing, with no broker: pages, holes, the ledger's end, a
/// reconnect in the middle.
@Suite("Fleet resend: every seq asked for, once counted, holes named, again after a reconnect")
struct ResendJobTests {
    static let command = FleetCommand(id: "gap", name: .resend, action: .resend(from: 3, to: nil), deadline: 0, by: nil)

    static func events(_ seqs: [Int64]) -> [JSON] { seqs.map { ["seq": .int($0), "kind": "coin"] } }

    @Test("seqs from … to, holes the ledger lacks named as ranges, to cut at the ledger's end")
    func pages() {
        let it = Mutable(ResendJob(Self.command, from: 3, to: 20))
        let want = it.value.wantsPage
        #expect(want?.since == 2 && want?.limit == 18)
        // The ledger holds 3…5 and 8…12, and ends at 12.
        it.value.took(page: Self.events([3, 4, 5, 8, 9, 10, 11, 12]), limit: 18)
        var mid: Int32 = 0
        var sent: [Int64] = []
        while let (seq, _) = it.value.nextToSend() {
            mid += 1
            it.value.sent(seq, mid: mid)
            sent.append(seq)
        }
        #expect(sent == [3, 4, 5, 8, 9, 10, 11, 12])
        #expect(it.value.wantsPage == nil && it.value.to == 12)
        #expect(!it.value.isDone, "copies await PUBACK")
        for m in 1...mid {
            let acked = it.value.puback(m)
            #expect(acked)
        }
        #expect(it.value.isDone)
        #expect(it.value.result == ["from": 3, "to": 12, "resent": 8, "missing": [[6, 7]]])
    }

    @Test("a reconnect sends again from the lowest copy not PUBACKed, and counts each seq once")
    func reconnect() {
        let it = Mutable(ResendJob(Self.command, from: 1, to: 4))
        it.value.took(page: Self.events([1, 2, 3, 4]), limit: 4)
        #expect(it.value.wantsPage == nil)
        for seq in Int64(1)...3 {
            if let (s, _) = it.value.nextToSend() { it.value.sent(s, mid: Int32(seq)) }
        }
        let mine = it.value.puback(1), stranger = it.value.puback(9)
        #expect(mine && !stranger)
        it.value.brokerLost()
        #expect(it.value.wantsPage?.since == 1, "read again from seq 2")
        it.value.took(page: Self.events([2, 3, 4]), limit: 3)
        var mid: Int32 = 10
        while let (seq, _) = it.value.nextToSend() {
            mid += 1
            it.value.sent(seq, mid: mid)
            let acked = it.value.puback(mid)
            #expect(acked)
        }
        #expect(it.value.isDone && it.value.result["resent"] == 4 && it.value.result["missing"] == [])
    }

    @Test("a copy the link would not take goes first after the reconnect, even with nothing in flight")
    func putBack() {
        let it = Mutable(ResendJob(Self.command, from: 1, to: 2))
        it.value.took(page: Self.events([1, 2]), limit: 2)
        let first = it.value.nextToSend()
        #expect(first?.seq == 1)
        if let first { it.value.putBack(first.seq, first.event) }
        it.value.brokerLost()
        #expect(it.value.wantsPage?.since == 0 && !it.value.isDone, "read again from seq 1")
    }

    @Test("from beyond the ledger's end: to falls below from, and nothing is sent")
    func beyond() {
        let it = Mutable(ResendJob(Self.command, from: 50, to: nil))
        #expect(it.value.wantsPage?.limit == ResendJob.page)
        it.value.took(page: [], limit: ResendJob.page)
        #expect(it.value.isDone && (it.value.to ?? 99) < 50 && it.value.resent == 0)
    }
}
