import CoinMechModel
import CoinMechProtocol
import Testing

/// The socket protocol's wire format, byte for byte. The expected lines are docs/PROTOCOL.md's
/// (its example session, and its requests and events with their "…" filled in), typed here by
/// hand: a change to a key, a value's form or the key order fails here before any client sees it.
@Suite("Wire format: requests, replies and events byte for byte as PROTOCOL.md documents them")
struct WireFormatTests {
    @Test("every command's request line, and back to the same command", arguments: [
        (OperatorCommand.status, #"{"cmd":"status","id":1}"#),
        (.chain, #"{"cmd":"chain","id":1}"#),
        (.totals, #"{"cmd":"totals","id":1}"#),
        (.events(since: 0, limit: 100), #"{"cmd":"events","id":1,"limit":100,"since":0}"#),
        (.subscribe(since: 120, pending: false), #"{"cmd":"subscribe","id":1,"pending":false,"since":120}"#),
        (.subscribe(since: nil, pending: true), #"{"cmd":"subscribe","id":1,"pending":true}"#),
        (.inhibit(true), #"{"cmd":"inhibit","id":1,"on":true}"#),
        (.collect, #"{"cmd":"collect","id":1}"#),
        (.reload, #"{"cmd":"reload","id":1}"#),
        (.teachStart(currency: "EUR", code: "EUR_50c", coins: 40), #"{"cmd":"teach_start","code":"EUR_50c","coins":40,"currency":"EUR","id":1}"#),
        (.teachStatus, #"{"cmd":"teach_status","id":1}"#),
        (.teachCommit, #"{"cmd":"teach_commit","id":1}"#),
        (.teachAbort, #"{"cmd":"teach_abort","id":1}"#),
        (.explain(diameter: 24.26, weight: 5.67, thickness: 1.75), #"{"cmd":"explain","diameter":24.26,"id":1,"thickness":1.75,"weight":5.67}"#),
        (.explain(diameter: 24.26, weight: nil, thickness: nil), #"{"cmd":"explain","diameter":24.26,"id":1}"#),
        (.payoutPlan(amountMinor: 35, currency: "USD"), #"{"amount_minor":35,"cmd":"payout_plan","currency":"USD","id":1}"#),
        (.payoutPlan(amountMinor: 35, currency: nil), #"{"amount_minor":35,"cmd":"payout_plan","id":1}"#),
        (.payout(amountMinor: 35, currency: "USD", requestID: "sale-1042"), #"{"amount_minor":35,"cmd":"payout","currency":"USD","id":1,"request_id":"sale-1042"}"#),
        (.refill(unit: "EU200A", coins: 40, requestID: "load-7"), #"{"cmd":"refill","coins":40,"id":1,"request_id":"load-7","unit":"EU200A"}"#),
        (.float(unit: "0", level: 120, requestID: "count-3"), #"{"cmd":"float","id":1,"level":120,"request_id":"count-3","unit":"0"}"#),
        (.credit, #"{"cmd":"credit","id":1}"#),
        (.spend(amountMinor: 150, currency: "USD", item: "A4", requestID: "sale-7"),
         #"{"amount_minor":150,"cmd":"spend","currency":"USD","id":1,"item":"A4","request_id":"sale-7"}"#),
        (.spend(amountMinor: 150, currency: nil, item: nil, requestID: "sale-8"), #"{"amount_minor":150,"cmd":"spend","id":1,"request_id":"sale-8"}"#),
        (.refund(requestID: "sale-7"), #"{"cmd":"refund","id":1,"request_id":"sale-7"}"#),
        (.cancel(requestID: "esc-3"), #"{"cmd":"cancel","id":1,"request_id":"esc-3"}"#),
    ])
    func requests(command: OperatorCommand, line: String) throws {
        #expect(command.request(id: .int(1)).description == line)
        let parsed = try ClientRequest.parse(line).get()
        #expect(try parsed.command.get() == command)
        #expect(parsed.id == .int(1))
    }

    @Test("every command has a wire name, and the read and control sets are the documented ones")
    func names() {
        #expect(ClientProtocol.readCommands == ["status", "totals", "chain", "events", "subscribe", "teach_status", "explain", "payout_plan", "credit"])
        #expect(ClientProtocol.controlCommands == ["inhibit", "collect", "reload", "teach_start", "teach_commit", "teach_abort", "payout", "refill", "float",
                                                  "spend", "refund", "cancel"])
    }

    @Test("the example session's hello, reply and error, as PROTOCOL.md prints them")
    func session() {
        #expect(ClientProtocol.hello(version: "0.5.0", seq: 41).description
            == #"{"daemon":"coinmechd","protocol":2,"seq":41,"type":"hello","version":"0.5.0"}"#)
        let totals = Totals(current: [TotalsRow(currency: "USD", denomination: "quarter", count: 3, valueMinor: 75, weightG: 17.01)],
                            lifetime: [TotalsRow(currency: "USD", denomination: "quarter", count: 3, valueMinor: 75, weightG: 17.01)])
        #expect(ClientProtocol.reply(id: .int(1), result: totals.json).description
            == #"{"id":1,"ok":true,"result":{"current":[{"count":3,"currency":"USD","denomination":"quarter","value_minor":75,"weight_g":17.01}],"current_value":{"USD":75},"lifetime":[{"count":3,"currency":"USD","denomination":"quarter","value_minor":75,"weight_g":17.01}],"lifetime_value":{"USD":75},"pending":[],"pending_value":{},"unconfirmed":[],"unconfirmed_value":{}},"type":"reply"}"#)
        let refused = ClientRequest.parse(#"{"cmd":"fly","id":2}"#).flatMap { request in request.command.map { _ in request } }
        guard case .failure(let failure) = refused else { Issue.record("'fly' was taken"); return }
        #expect(ClientProtocol.error(id: failure.id, failure.code, failure.message).description
            == #"{"error":{"code":"unknown_command","message":"unknown command 'fly' (known: cancel, chain, collect, credit, events, explain, float, inhibit, payout, payout_plan, refill, refund, reload, spend, status, subscribe, teach_abort, teach_commit, teach_start, teach_status, totals)"},"id":2,"ok":false,"type":"reply"}"#)
    }

    @Test("events: a pending accept, its coin, a rejection, a lost source, and how a subscriber gets them")
    func events() {
        let decision = LedgerEvent(seq: 57, time: 1795286946.46, kind: "decision", source: "serial", epoch: 1, deviceSeq: 12, diameterMM: 24.31,
                                   weightG: 5.69, thicknessMM: 1.76, verdict: "accept", currency: "USD", denomination: "quarter", valueMinor: 25,
                                   link: "usd", chainGeneration: 3, state: "pending")
        #expect(decision.json.description
            == #"{"chain_generation":3,"currency":"USD","denomination":"quarter","device_seq":12,"diameter_mm":24.31,"epoch":1,"kind":"decision","link":"usd","seq":57,"source":"serial","state":"pending","thickness_mm":1.76,"time":1795286946.46,"value_minor":25,"verdict":"accept","weight_g":5.69}"#)
        let coin = LedgerEvent(seq: 59, time: 1795286946.52, kind: "coin", source: "serial", epoch: 1, deviceSeq: 12, currency: "USD",
                               denomination: "quarter", valueMinor: 25, link: "usd", message: "stored", chainGeneration: 3, refSeq: 57)
        #expect(ClientProtocol.event(coin).description
            == #"{"event":{"chain_generation":3,"currency":"USD","denomination":"quarter","device_seq":12,"epoch":1,"kind":"coin","link":"usd","message":"stored","ref_seq":57,"seq":59,"source":"serial","time":1795286946.52,"value_minor":25},"seq":59,"type":"event"}"#)
        let rejection = LedgerEvent(seq: 58, time: 1795286946.5, kind: "decision", verdict: "reject", link: "weight-floor",
                                    reason: "too_light", message: "lighter than 1.5 g: washer, token or foil?", chainGeneration: 3)
        #expect(rejection.json.description
            == #"{"chain_generation":3,"kind":"decision","link":"weight-floor","message":"lighter than 1.5 g: washer, token or foil?","reason":"too_light","seq":58,"time":1795286946.5,"verdict":"reject"}"#)
        // A time on a whole second keeps its ".0": a double is always written as one.
        let lost = LedgerEvent(seq: 60, time: 1795286947, kind: "source_lost", source: "serial", detail: #"{"device":"/dev/coinmech0","reason":"hang-up"}"#)
        #expect(lost.json.description
            == #"{"detail":{"device":"/dev/coinmech0","reason":"hang-up"},"kind":"source_lost","seq":60,"source":"serial","time":1795286947.0}"#)
        #expect(ClientProtocol.overflow(resumeFrom: 60).description == #"{"resume_from":60,"type":"overflow"}"#)
    }

    @Test("status: the documented example, byte for byte, and read back by a client as it was")
    func status() {
        var reply = StatusReply(source: .init(kind: "serial", device: "/dev/coinmech0", connected: true), inhibited: false)
        reply.pending = 2
        reply.chainGeneration = 3
        reply.links = 4
        reply.pluginErrors = [.init(link: "third-party", count: 3, last: "plugin accepted what cannot be credited")]
        reply.pluginLies = [.init(link: "third-party", count: 1, last: "'dime' is 10 USD minor units, not 100")]
        reply.linkProblems = [.init(link: "third-party", state: "quarantined", cause: "crashes", reason: "crashed 3 times within 60 s", since: 1795287001.2)]
        reply.pluginInhibit = "link 'third-party' is quarantined: crashed 3 times within 60 s"
        reply.counters.readings = 142
        reply.counters.accepted = 120
        reply.counters.credited = 117
        reply.counters.returnedAfterAccept = 1
        reply.counters.rejected = 22
        reply.counters.protocolErrors = 1
        reply.counters.queries = 4
        reply.counters.connects = 1
        reply.uptimeSeconds = 3723.4
        reply.heartbeatAgeMilliseconds = 12
        reply.lastSeq = 170
        reply.version = "0.5.0"
        reply.ledgerBytes = 1_327_104
        reply.decisionLatency = .init(boundsMicroseconds: [1000, 5000], counts: [130, 11, 1], sumMicroseconds: 92_000)
        reply.credit = [.init(account: "serial", currency: "USD", balanceMinor: 150, movedSeq: 168)]
        #expect(reply.json.description == #"{"chain_generation":3,"counters":{"accepted":120,"bad_alloy":0,"connects":1,"credited":117,"deadline_passed":0,"duplicates":0,"late_answers":0,"protocol_errors":1,"queries":4,"readings":142,"reconnects":0,"rejected":22,"returned_after_accept":1,"unconfirmed":0},"credit":[{"account":"serial","balance_minor":150,"currency":"USD","moved_seq":168}],"decision_latency":{"bounds_us":[1000,5000],"counts":[130,11,1],"sum_us":92000},"heartbeat_age_ms":12,"inhibited":false,"last_seq":170,"ledger":"ok","ledger_bytes":1327104,"link_problems":[{"cause":"crashes","link":"third-party","reason":"crashed 3 times within 60 s","since":1795287001.2,"state":"quarantined"}],"links":4,"pending":2,"plugin_errors":[{"count":3,"last":"plugin accepted what cannot be credited","link":"third-party"}],"plugin_inhibit":"link 'third-party' is quarantined: crashed 3 times within 60 s","plugin_lies":[{"count":1,"last":"'dime' is 10 USD minor units, not 100","link":"third-party"}],"source":{"device":"/dev/coinmech0","kind":"serial","state":"connected"},"uptime_s":3723.4,"version":"0.5.0"}"#)
        #expect(StatusReply(json: reply.json) == reply)
        var down = StatusReply(source: .init(kind: "cctalk", device: "/dev/ttyUSB0", connected: false, reason: "device removed"), inhibited: true)
        down.ledgerOK = false
        down.acceptor = StatusReply.Acceptor(json: ["accepting": false])
        #expect(StatusReply(json: down.json) == down)
        #expect(down.json["source"]?["reason"] == .string("device removed") && down.json["ledger"] == .string("failing"))
    }

    @Test("credit: the balance, a sale approved, refused, refunded, the credit returned and kept, as PROTOCOL.md prints them, and read back")
    func credit() throws {
        let balance = CreditBalanceReply(source: "serial", accounts: [.init(account: "serial", currency: "USD", balanceMinor: 150, movedSeq: 412)])
        #expect(balance.json.description == #"{"accounts":[{"account":"serial","balance_minor":150,"currency":"USD","moved_seq":412}],"source":"serial"}"#)
        #expect(try CreditBalanceReply(json: balance.json) == balance)

        var approved = CreditReply(requestID: "sale-7", state: .approved, currency: "USD", balanceMinor: 25)
        approved.amountMinor = 125
        approved.item = "A4"
        approved.seq = 413
        approved.repeated = false
        var refused = CreditReply(requestID: "sale-8", state: .refused, currency: "USD", balanceMinor: 25)
        refused.amountMinor = 125
        refused.reason = "credit_short"
        var refunded = CreditReply(requestID: "sale-7", state: .refunded, currency: "USD", balanceMinor: 150)
        refunded.amountMinor = 125
        refunded.seq = 414
        refunded.repeated = false
        var payout = PayoutReply(requestID: "esc-3", state: .done, amountMinor: 150, currency: "USD", repeated: false)
        payout.paidMinor = 150
        payout.debtMinor = 0
        payout.afterRestart = false
        payout.seq = 420
        payout.coins = [PaidCoins(type: 2, coinID: "USD25", valueMinor: 25, count: 6)]
        var returned = CreditReply(requestID: "esc-3", state: .returned, currency: "USD", balanceMinor: 0)
        returned.keptMinor = 0
        returned.payout = payout
        returned.repeated = false
        var kept = CreditReply(requestID: "esc-4", state: .kept, currency: "USD", balanceMinor: 150)
        kept.reason = "no device here pays change: the credit stays"
        let lines = [
            #"{"amount_minor":125,"balance_minor":25,"currency":"USD","item":"A4","repeated":false,"request_id":"sale-7","seq":413,"state":"approved"}"#,
            #"{"amount_minor":125,"balance_minor":25,"currency":"USD","reason":"credit_short","request_id":"sale-8","state":"refused"}"#,
            #"{"amount_minor":125,"balance_minor":150,"currency":"USD","repeated":false,"request_id":"sale-7","seq":414,"state":"refunded"}"#,
            #"{"balance_minor":0,"currency":"USD","kept_minor":0,"payout":{"after_restart":false,"amount_minor":150,"coins":[{"coin_id":"USD25","count":6,"type":2,"value_minor":25}],"currency":"USD","debt_minor":0,"paid_minor":150,"repeated":false,"request_id":"esc-3","seq":420,"state":"done"},"repeated":false,"request_id":"esc-3","state":"returned"}"#,
            #"{"balance_minor":150,"currency":"USD","reason":"no device here pays change: the credit stays","request_id":"esc-4","state":"kept"}"#,
        ]
        for (reply, line) in zip([approved, refused, refunded, returned, kept], lines) {
            #expect(reply.json.description == line)
            #expect(try CreditReply(json: reply.json) == reply)
        }
    }
}
