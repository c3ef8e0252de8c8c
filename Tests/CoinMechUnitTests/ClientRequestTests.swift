import CoinMechProtocol
import Testing

@Suite("Socket requests: a line read and checked, without a daemon")
struct ClientRequestTests {
    @Test("valid requests become commands, with defaults and the id kept", arguments: [
        (#"{"cmd":"status","id":"abc"}"#, ClientRequest.Command.status, JSON.string("abc")),
        (#"{"cmd":"totals"}"#, .totals, nil),
        (#"{"cmd":"chain","id":null}"#, .chain, JSON.null),
        (#"{"cmd":"events","id":7}"#, .events(since: 0, limit: 100), .int(7)),
        (#"{"cmd":"events","since":12,"limit":1000.0}"#, .events(since: 12, limit: 1000), nil),
        (#"{"cmd":"subscribe"}"#, .subscribe(since: nil, pending: false), nil),
        (#"{"cmd":"subscribe","since":null,"pending":null}"#, .subscribe(since: nil, pending: false), nil),
        (#"{"cmd":"subscribe","since":0,"pending":true,"id":[1]}"#, .subscribe(since: 0, pending: true), .array([1])),
        (#"{"cmd":"inhibit","on":false}"#, .inhibit(false), nil),
        (#" {"cmd":"collect"} "#, .collect, nil),
        (#"{"cmd":"reload"}"#, .reload, nil),
        (#"{"cmd":"payout_plan","amount_minor":35}"#, .payoutPlan(amountMinor: 35, currency: nil), nil),
        (#"{"cmd":"payout_plan","amount_minor":100000,"currency":"EUR"}"#, .payoutPlan(amountMinor: 100_000, currency: "EUR"), nil),
    ])
    func valid(line: String, command: ClientRequest.Command, id: JSON?) throws {
        let request = try ClientRequest.parse(line).get()
        #expect(try request.command.get() == command)
        #expect(request.id == id)
    }

    @Test("lines that are not a request are refused before any command", arguments: [
        ("not json at all", ClientProtocol.ErrorCode.badJSON, nil as JSON?),
        ("[1, 2]", .badJSON, nil),
        ("", .badJSON, nil),
        (#"{"id": 7}"#, .badRequest, .int(7)),
        (#"{"cmd": 3, "id": "x"}"#, .badRequest, .string("x")),
    ])
    func refused(line: String, code: ClientProtocol.ErrorCode, id: JSON?) {
        #expect(throws: ClientRequest.Failure(id: id, code, failureMessage(line))) { try ClientRequest.parse(line).get() }
    }

    @Test("a known name with bad arguments, or an unknown name, is a request whose command fails", arguments: [
        (#"{"cmd": "fly", "id": 7}"#, ClientProtocol.ErrorCode.unknownCommand),
        (#"{"cmd": "events", "since": "yesterday"}"#, .badRequest),
        (#"{"cmd": "events", "since": -1}"#, .badRequest),
        (#"{"cmd": "events", "limit": 5000}"#, .badRequest),
        (#"{"cmd": "events", "limit": 0}"#, .badRequest),
        (#"{"cmd": "events", "limit": 2.5}"#, .badRequest),
        (#"{"cmd": "subscribe", "since": -3}"#, .badRequest),
        (#"{"cmd": "subscribe", "pending": "yes"}"#, .badRequest),
        (#"{"cmd": "inhibit"}"#, .badRequest),
        (#"{"cmd": "inhibit", "on": "yes"}"#, .badRequest),
        (#"{"cmd": "payout_plan"}"#, .badRequest),
        (#"{"cmd": "refill", "unit": "EU200A", "coins": 4, "request_id": "two words"}"#, .badRequest),
        (#"{"cmd": "float", "unit": "0", "level": 4, "request_id": 17}"#, .badRequest),
        (#"{"cmd": "refill", "unit": "EU200A", "coins": 4, "request_id": ""}"#, .badRequest),
        (#"{"cmd": "refill", "unit": "EU200A", "coins": 4}"#, .badRequest),
        (#"{"cmd": "float", "unit": "0", "level": 4, "request_id": null}"#, .badRequest),
        (#"{"cmd": "payout_plan", "amount_minor": 0}"#, .badRequest),
        (#"{"cmd": "payout_plan", "amount_minor": 100001}"#, .badRequest),
        (#"{"cmd": "payout_plan", "amount_minor": 0.35}"#, .badRequest),
        (#"{"cmd": "payout_plan", "amount_minor": 35, "currency": "usd"}"#, .badRequest),
        (#"{"cmd": "payout_plan", "amount_minor": 35, "currency": "DOLLAR"}"#, .badRequest),
    ])
    func badArguments(line: String, code: ClientProtocol.ErrorCode) throws {
        let request = try ClientRequest.parse(line).get()
        #expect(throws: ClientRequest.Failure.self) { try request.command.get() }
        if case .failure(let failure) = request.command {
            #expect(failure.code == code)
            #expect(failure.id == request.id)
            #expect(!failure.message.isEmpty)
        }
    }

    @Test("refill and float without a request id are refused with bad_request naming request_id, as payout is", arguments: [
        #"{"cmd": "refill", "unit": "EU200A", "coins": 4, "id": 3}"#,
        #"{"cmd": "float", "unit": "0", "level": 12, "id": 3}"#,
        #"{"cmd": "payout", "amount_minor": 35, "id": 3}"#,
    ])
    func requestIDRequired(line: String) throws {
        let request = try ClientRequest.parse(line).get()
        guard case .failure(let failure) = request.command else { Issue.record("\(line) was taken without a request id"); return }
        #expect(failure.code == .badRequest && failure.id == .int(3))
        #expect(failure.message.hasPrefix("\"request_id\" is required"), "\(failure.message)")
    }

    @Test("a credit command with a bad field is refused with bad_request naming the field, before the daemon sees it", arguments: [
        (#"{"cmd": "spend", "amount_minor": 0, "request_id": "s1", "id": 3}"#, "amount_minor"),
        (#"{"cmd": "spend", "amount_minor": -25, "request_id": "s1", "id": 3}"#, "amount_minor"),
        (#"{"cmd": "spend", "amount_minor": 1.5, "request_id": "s1", "id": 3}"#, "amount_minor"),
        (#"{"cmd": "spend", "amount_minor": "125", "request_id": "s1", "id": 3}"#, "amount_minor"),
        (#"{"cmd": "spend", "amount_minor": 100001, "request_id": "s1", "id": 3}"#, "amount_minor"),
        (#"{"cmd": "spend", "request_id": "s1", "id": 3}"#, "amount_minor"),
        (#"{"cmd": "spend", "amount_minor": 125, "id": 3}"#, "request_id"),
        (#"{"cmd": "spend", "amount_minor": 125, "request_id": "s 1", "id": 3}"#, "request_id"),
        (#"{"cmd": "spend", "amount_minor": 125, "request_id": "s1", "currency": "usd", "id": 3}"#, "currency"),
        (#"{"cmd": "spend", "amount_minor": 125, "request_id": "s1", "item": "", "id": 3}"#, "item"),
        (#"{"cmd": "spend", "amount_minor": 125, "request_id": "s1", "item": "B4\u0007", "id": 3}"#, "item"),
        (#"{"cmd": "spend", "amount_minor": 125, "request_id": "s1", "item": "B\u200b4", "id": 3}"#, "item"),
        (#"{"cmd": "spend", "amount_minor": 125, "request_id": "s1", "item": "B4\u2028", "id": 3}"#, "item"),
        (#"{"cmd": "spend", "amount_minor": 125, "request_id": "s1", "item": 4, "id": 3}"#, "item"),
        (#"{"cmd": "refund", "id": 3}"#, "request_id"),
        (#"{"cmd": "cancel", "request_id": "", "id": 3}"#, "request_id"),
        (#"{"cmd": "cancel", "request_id": "standing-41", "id": 3}"#, "request_id"),
        (#"{"cmd": "spend", "amount_minor": 5, "request_id": "expiry-41", "id": 3}"#, "request_id"),
    ])
    func creditFields(line: String, field: String) throws {
        let request = try ClientRequest.parse(line).get()
        guard case .failure(let failure) = request.command else { Issue.record("\(line) was taken"); return }
        #expect(failure.code == .badRequest && failure.id == .int(3))
        #expect(failure.message.hasPrefix("\"\(field)\""), "\(failure.message)")
    }

    private func failureMessage(_ line: String) -> String {
        line.hasPrefix("{") ? "missing \"cmd\" (a string)" : "not a JSON object"
    }
}
