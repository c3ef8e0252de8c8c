import CoinMechModel
import CoinMechProtocol
import Testing

/// The read commands' replies as types: what the daemon writes, a client reads back as it was;
/// a reply that lacks a field its command answers with is refused, naming the field, where
/// coinctl used to print a zero or a "?" for it.
@Suite("Typed replies: chain, explain, events, subscribe and a subscription's messages")
struct TypedReplyTests {
    static let link = ChainReply.Link(
        name: "usd", plugin: "coin-table", version: "2.2.0", sha256: "5803fa2f", loadedAt: 1795286946.3, license: "LicenseRef-CoinMech",
        summary: "matches a reading against a whole currency", readingKinds: ["measured"], abi: "2.0", isolation: "in-process",
        budgetMilliseconds: 10, state: "ok",
        statistics: .init(calls: 37, accepts: 34, rejects: 0, passes: 3, meanNanoseconds: 7401, sampledCalls: 1, pluginErrors: 0, lies: 0),
        description: ["warnings": []])

    @Test("chain: PROTOCOL.md's example read back as it was, with a sandboxed and a quarantined link")
    func chain() throws {
        var isolated = Self.link
        isolated.name = "guard"
        isolated.isolation = "isolated"
        isolated.sandbox = .init(layers: "landlock+seccomp+limits", landlockABI: 3, seccomp: true, limits: true, networkNamespace: false,
                                 missing: ["network namespace: not permitted"], required: false, memoryMiB: 64)
        isolated.state = "quarantined"
        isolated.problem = .init(link: "guard", state: "quarantined", cause: "crash", reason: "SIGSEGV in validate", since: 1795286950)
        isolated.lastPluginError = "bad json"
        let reply = ChainReply(generation: 3, links: [Self.link, isolated], terminalRejects: 3)
        #expect(try ChainReply(json: reply.json) == reply)
        #expect(try ChainReply(json: JSON.parse(reply.json.description)!) == reply, "through its text, as a client reads it")
    }

    @Test("chain: a reply without a link's statistics, or without the terminal, is refused by name")
    func chainRefusals() throws {
        var json = ChainReply(generation: 3, links: [Self.link], terminalRejects: 0).json
        guard case .object(var top) = json, case .array(var links) = top["links"]!, case .object(var first) = links[0] else {
            Issue.record("the chain reply is not the shape it writes")
            return
        }
        first["statistics"] = nil
        links[0] = .object(first)
        top["links"] = .array(links)
        #expect(throws: ReplyError("a chain link reply has no object \"statistics\"")) { try ChainReply(json: .object(top)) }
        json = ["generation": 3, "links": []]
        #expect(throws: ReplyError("a chain reply has no object \"terminal\"")) { try ChainReply(json: json) }
    }

    @Test("explain: each answer read back; a plugin's own object kept whole and read leniently")
    func explain() throws {
        let details: JSON = ["decision": "accept", "code": "quarter", "lines": ["following the mech's drift from 76 coins", 7], "drift": ["coins": 76]]
        let reply = ExplainReply(diameter: 24.26, weight: 5.67, thickness: nil, generation: 1, links: [
            .init(name: "sanity", plugin: "sanity", version: "2.0.0", answer: .notAsked("its plugin has no explain function")),
            .init(name: "usd", plugin: "coin-table", version: "2.2.0", answer: .explained(details)),
        ])
        let read = try ExplainReply(json: JSON.parse(reply.json.description)!)
        #expect(read == reply)
        #expect(read.links[1].answer.decision == "accept")
        #expect(read.links[1].answer.lines == ["following the mech's drift from 76 coins"], "what is not text is left out, not refused")
        #expect(throws: ReplyError("an explain link reply has no object \"explanation\"")) {
            try ExplainReply(json: ["generation": 1, "reading": ["diameter": 24.26], "links": [["name": "usd", "plugin": "coin-table", "version": "2"]]])
        }
        #expect(throws: ReplyError("an explain reading reply has no number \"diameter\"")) {
            try ExplainReply(json: ["generation": 1, "reading": ["weight": 5.67], "links": []])
        }
    }

    @Test("events: every field of an event read back as the ledger had it, the alloy and a collection's rows among them")
    func events() throws {
        var coin = LedgerEvent(seq: 59, time: 1795286946.52, kind: "coin", source: "serial", epoch: 1, deviceSeq: 12, diameterMM: 24.31,
                               weightG: 5.69, thicknessMM: 1.76, channel: 4, verdict: "accept", currency: "USD", denomination: "quarter",
                               valueMinor: 25, link: "usd", reason: nil, message: "stored", chainGeneration: 3, detail: #"{"routing":"tube"}"#,
                               state: "settled", refSeq: 57)
        coin.conductivityLowIACS = 24.1
        coin.conductivityHighIACS = 24.3
        coin.permeability = 1.0
        var collect = LedgerEvent(seq: 60, time: 1795286947, kind: "collect")
        collect.collected = [TotalsRow(currency: "USD", denomination: "quarter", count: 2, valueMinor: 50, weightG: 11.34)]
        collect.collectedUnconfirmed = [TotalsRow(currency: "USD", denomination: "dime", count: 1, valueMinor: 10, weightG: 2.268)]
        let reply = EventsReply(events: [coin, collect], lastSeq: 60)
        #expect(try EventsReply(json: JSON.parse(reply.json.description)!) == reply)
        #expect(try SubscriptionMessage(json: JSON.parse(ClientProtocol.event(coin).description)!) == .event(coin))
        #expect(try SubscriptionMessage(json: ClientProtocol.overflow(resumeFrom: 60)) == .overflow(resumeFrom: 60))
    }

    @Test("events: an event without its seq, with a seq that is text, or a message of another type, is refused")
    func eventRefusals() {
        #expect(throws: ReplyError("an event reply has no whole number \"seq\"")) { try LedgerEvent(json: ["time": 1.0, "kind": "coin"]) }
        #expect(throws: ReplyError("an event reply has no whole number \"seq\"")) { try LedgerEvent(json: ["seq": "59", "time": 1.0, "kind": "coin"]) }
        #expect(throws: ReplyError("an event reply's \"value_minor\" is not a whole number")) {
            try LedgerEvent(json: ["seq": 59, "time": 1.0, "kind": "coin", "value_minor": "25"])
        }
        #expect(throws: ReplyError("an events reply has no whole number \"last_seq\"")) { try EventsReply(json: ["events": []]) }
        #expect(throws: ReplyError(#"a subscription message that is neither an event nor an overflow: {"type":"reply"}"#)) {
            try SubscriptionMessage(json: ["type": "reply"])
        }
        #expect(throws: ReplyError("a subscribe reply has no true or false \"pending\"")) { try SubscribeReply(json: ["since": 1, "seq": 2]) }
    }
}
