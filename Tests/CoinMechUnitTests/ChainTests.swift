import CoinFacts
import CoinMechChain
import CoinMechPluginABI
import CoinMechPlugins
@testable import CoinMechTestSupport
import CoinSimCore
import Foundation
import Testing

/// The textbook chain: one `coin` link per US denomination.
func textbookLinks() -> [LinkSpec] {
    CoinTables.usd.map { spec in
        LinkSpec(name: spec.code, plugin: "coin", configJSON: """
            {"currency":"USD","code":"\(spec.code)","value":\(spec.valueMinor),"diameter_mm":\(spec.diameterMM),"weight_g":\(spec.weightG)}
            """)
    }
}

@Suite("Chain: first decisive verdict wins, terminal link rejects the rest")
struct ChainTests {
    @Test("a penny is accepted as a penny, by the cent link")
    func pennyAccepted() throws {
        let chain = try TestSupport.chain(textbookLinks())
        let decision = chain.decide(.coin(19.05, 2.5))
        #expect(decision.denomination == Denomination(currency: "USD", code: "cent", valueMinor: 1))
        #expect(decision.linkName == "cent")
        #expect(decision.chainGeneration == 1)
    }

    @Test("a quarter's diameter with a dime's weight passes every link and is rejected as unrecognized")
    func quarterDiameterDimeWeight() throws {
        let chain = try TestSupport.chain(textbookLinks())
        let decision = chain.decide(.coin(24.26, 2.268))
        #expect(decision.rejection?.reason == "unrecognized")
        #expect(decision.linkName == Chain.terminalLinkName)
        for link in chain.links {
            #expect(link.statistics.snapshot.passes == 1, "link \(link.name) should have passed")
        }
        #expect(chain.terminalStatistics.snapshot.rejects == 1)
    }

    @Test("statistics count calls, accepts, rejects and passes per link")
    func statistics() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "sanity")] + textbookLinks())
        _ = chain.decide(.coin(24.26, 5.67))  // quarter: sanity passes, cent/nickel/dime pass, quarter accepts
        _ = chain.decide(.coin(.nan, 5.67))   // sanity rejects
        _ = chain.decide(.coin(30, 9))        // everything passes
        let stats = Dictionary(uniqueKeysWithValues: chain.links.map { ($0.name, $0.statistics.snapshot) })
        #expect(stats["sanity"]?.calls == 3)
        #expect(stats["sanity"]?.rejects == 1)
        #expect(stats["sanity"]?.passes == 2)
        #expect(stats["cent"]?.calls == 2)
        #expect(stats["quarter"]?.accepts == 1)
        #expect(stats["quarter"]?.passes == 1)
        // The first walk is always timed.
        #expect(stats["sanity"]?.sampledCalls == 1)
    }

    @Test("the order comes from configuration: a guard first rejects what a coin link would accept")
    func orderFromConfiguration() throws {
        let floor = LinkSpec(plugin: "weight-floor", configJSON: #"{"min_weight_g": 3.0}"#)
        let guardFirst = try TestSupport.chain([floor] + textbookLinks())
        let coinsFirst = try TestSupport.chain(textbookLinks() + [floor])
        #expect(guardFirst.decide(.coin(19.05, 2.5)).rejection?.reason == "too_light")
        #expect(coinsFirst.decide(.coin(19.05, 2.5)).denomination?.code == "cent")
    }

    @Test("duplicate link names and empty chains are refused")
    func badChains() throws {
        #expect(throws: ChainBuildError(position: 2, link: "sanity", cause: .duplicateName)) {
            try TestSupport.chain([LinkSpec(plugin: "sanity"), LinkSpec(plugin: "sanity")])
        }
        #expect(throws: ChainBuildError(position: 0, link: "", cause: .empty)) { try TestSupport.chain([]) }
    }

    @Test("a build error names the link and the plugin's message")
    func buildErrorNamesLink() throws {
        do throws(ChainBuildError) {
            _ = try ChainBuilder(loader: TestSupport.loader()).build(generation: 1, links: [
                LinkSpec(plugin: "sanity"), LinkSpec(name: "usd", plugin: "coin-table", configJSON: #"{"currency":"XXX"}"#),
            ])
            Issue.record("build should fail")
        } catch {
            #expect(error.position == 2)
            #expect(error.description.hasPrefix("chain link 2 'usd': "))
            #expect(error.description.hasSuffix("create failed: key 'currency': no built-in table for 'XXX' (known: USD, EUR, GBP)"))
        }
    }

    @Test("a plugin answering an unknown verdict or an empty accept is a plugin_error rejection, named")
    func misbehavingPlugin() throws {
        let dir = TestSupport.temporaryDirectory("misbehaving")
        _ = try TestSupport.compileFixture("misbehaving", into: dir)
        let builder = ChainBuilder(loader: TestSupport.loader(directory: dir))
        let badVerdict = try builder.build(generation: 1, links: [LinkSpec(name: "odd", plugin: "misbehaving", configJSON: #"{"mode":"bad_verdict"}"#)])
        let decision = badVerdict.decide(.coin(24.26, 5.67))
        #expect(decision.rejection == Rejection(reason: "plugin_error", message: "plugin returned unknown verdict 7"))
        #expect(decision.linkName == "odd")
        let emptyAccept = try builder.build(generation: 1, links: [LinkSpec(plugin: "misbehaving", configJSON: #"{"mode":"empty_accept"}"#)])
        #expect(emptyAccept.decide(.coin(24.26, 5.67)).rejection?.reason == "plugin_error")
        #expect(emptyAccept.links[0].statistics.snapshot.rejects == 1)
    }

    @Test("the host believes no accept it cannot credit: huge values, codes that are not text, made-up currencies", arguments: [
        ("liar", "plugin accepted what cannot be credited: code is not printable ASCII ending within 31 bytes"),
        ("fake_currency", "plugin accepted what cannot be credited: currency 'ZZZ' is not an ISO 4217 code"),
    ])
    func hostChecksAccepts(mode: String, message: String) throws {
        let dir = TestSupport.temporaryDirectory("liar")
        _ = try TestSupport.compileFixture("misbehaving", into: dir)
        let chain = try ChainBuilder(loader: TestSupport.loader(directory: dir))
            .build(generation: 1, links: [LinkSpec(name: "third-party", plugin: "misbehaving", configJSON: "{\"mode\":\"\(mode)\"}")])
        let decision = chain.decide(.coin(24.26, 5.67))
        #expect(!decision.isAccept)
        #expect(decision.acceptedValueMinor == 0)
        #expect(decision.rejection == Rejection(reason: "plugin_error", message: message))
        #expect(decision.linkName == "third-party")
        let statistics = chain.links[0].statistics.snapshot
        #expect(statistics.pluginErrors == 1 && statistics.accepts == 0)
        #expect(statistics.lastPluginError == message)
    }

    // Before the cabinet's coins were checked, "dime" at 100 was credited $1, and "EUR_2" in a
    // USD cabinet €2: the host checked only that a value was some coin's value of the currency.
    @Test("a plausible lie is returned and flagged, and the third lie quarantines the link", arguments: [
        ("dime_dollar", "'dime' is 10 USD minor units, not 100"),
        ("euro_two", "EUR is not this cabinet's currency (USD)"),
        ("odd_value", "'quarter' is 25 USD minor units, not 37"),
    ])
    func plausibleLies(mode: String, problem: String) throws {
        let dir = TestSupport.temporaryDirectory("lies")
        _ = try TestSupport.compileFixture("misbehaving", into: dir)
        let environment = ChainEnvironment(acceptPolicy: AcceptPolicy(coins: CabinetCoins.of(currencies: ["USD"])!))
        let chain = try ChainBuilder(loader: TestSupport.loader(directory: dir), environment: environment)
            .build(generation: 1, links: [LinkSpec(name: "third-party", plugin: "misbehaving", configJSON: "{\"mode\":\"\(mode)\"}")])
        let message = "plugin accepted a coin this cabinet does not take: \(problem)"
        for told in 1...3 {
            let decision = chain.decide(.coin(24.26, 5.67))
            #expect(!decision.isAccept && decision.acceptedValueMinor == 0)
            #expect(decision.rejection == Rejection(reason: "plugin_lie", message: message))
            #expect(chain.links[0].statistics.snapshot.lies == UInt64(told))
            #expect(chain.links[0].health.current == (told < 3 ? .ok : .quarantined), "after \(told) lies")
        }
        #expect(chain.links[0].health.problem?.cause == "lying")
        // Quarantined: not called again, every coin returned.
        let after = chain.decide(.coin(24.26, 5.67))
        #expect(after.rejection?.reason == "quarantined")
        #expect(chain.links[0].statistics.snapshot.lies == 3)
        #expect(chain.links[0].statistics.snapshot.accepts == 0)
    }

    @Test("the cabinet's coins: its currencies by their mint codes, declared tokens, and nothing else")
    func cabinetCoins() {
        func accept(_ currency: String, _ code: String, _ value: Int64) -> coinmech_decision {
            var decision = coinmech_decision()
            decision.size = UInt32(MemoryLayout<coinmech_decision>.size)
            coinmech_decision_accept(&decision, currency, code, value)
            return decision
        }
        let token = Denomination(currency: "USD", code: "ARCADE_TOKEN", valueMinor: 25)
        let usd = AcceptPolicy(coins: CabinetCoins.of(currencies: ["USD"], tokens: [token])!)
        #expect(usd.allows(accept("USD", "quarter", 25)))
        #expect(usd.allows(accept("USD", "dollar", 100)))
        #expect(usd.allows(accept("USD", "ARCADE_TOKEN", 25)))
        #expect(!usd.allows(accept("USD", "ARCADE_TOKEN", 50)))
        #expect(!usd.allows(accept("USD", "quarte", 25)), "a prefix of a code is not the code")
        #expect(!usd.allows(accept("USD", "quarterx", 25)))
        #expect(!usd.allows(accept("EUR", "EUR_2", 200)))
        #expect(usd.problem(accept("USD", "quarterx", 25)) == "'quarterx' is not a USD coin of this cabinet (25 is 'quarter')")
        #expect(usd.problem(accept("USD", "half", 30)) == "'half' at 30 is not a USD coin of this cabinet")
        // A currency without mint figures is creditable only through its declared coins.
        let chf = AcceptPolicy(coins: CabinetCoins(coins: [Denomination(currency: "CHF", code: "CHF_5", valueMinor: 500)]))
        #expect(chf.allows(accept("CHF", "CHF_5", 500)))
        #expect(!chf.allows(accept("CHF", "CHF_2", 200)))
        #expect(CabinetCoins.of(currencies: ["CHF"]) == nil)
        // The standard policy (no currency configured) takes every mint coin by its code.
        #expect(AcceptPolicy.standard.allows(accept("GBP", "GBP_2", 200)))
        #expect(!AcceptPolicy.standard.allows(accept("GBP", "GBP_2", 100)))
        // Garbage after the code's NUL does not matter; the code up to it does.
        var padded = accept("USD", "dime", 10)
        withUnsafeMutableBytes(of: &padded.code) { $0[10] = 0x41 }
        #expect(usd.allows(padded))
    }

    @Test("the accept check, a word at a time, agrees with a byte-by-byte reading of the rule on every field tried")
    func acceptCheckMatchesReference() {
        /// The rule as the header states it, byte by byte: three capital letters and a NUL that are
        /// an active code; a code of printable ASCII ending in a NUL within its field; and that
        /// currency, code and value together one of the cabinet's coins (here every mint coin).
        func reference(_ currency: [UInt8], _ code: [UInt8], _ value: Int64) -> Bool {
            guard currency[3] == 0, currency[0...2].allSatisfy({ $0 >= 65 && $0 <= 90 }) else { return false }
            let name = String(decoding: currency[0...2], as: UTF8.self)
            guard let end = code.firstIndex(of: 0), code[..<end].allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return false }
            let text = String(decoding: code[..<end], as: UTF8.self)
            // The mint coins of USD, EUR and GBP, from the tables the policy is not built from.
            let mint = CoinTables.usd + CoinTables.eur + CoinTables.gbp
            return mint.contains { $0.currency == name && $0.code == text && $0.valueMinor == value }
                || (name == "USD" && ((text == "half_dollar" && value == 50) || (text == "dollar" && value == 100)))
        }
        var rng = SplitMix64(seed: 9)
        let policy = AcceptPolicy.standard
        var checked = 0
        for round in 0..<20_000 {
            var currency: [UInt8] = Array(["USD", "EUR", "GBP", "CHF", "ZZZ", "usd", "U@D", "US[", "JPY"].randomElement(using: &rng)!.utf8) + [0]
            if round % 17 == 0 { currency[3] = UInt8.random(in: 1...255, using: &rng) }
            let length = Int.random(in: 0...32, using: &rng)
            var code = (0..<32).map { index -> UInt8 in index < length ? UInt8.random(in: 0x20...0x7E, using: &rng) : 0 }
            // Real codes half the time, so that the value and currency decide.
            if round % 2 == 0 {
                let real = Array(["quarter", "dime", "EUR_2", "EUR_50c", "GBP_20p", "dollar", "nickel", "cent"].randomElement(using: &rng)!.utf8)
                code = real + [UInt8](repeating: 0, count: 32 - real.count)
            }
            if round % 5 == 0 { code[Int.random(in: 0..<32, using: &rng)] = [0x1F, 0x7F, 0x80, 0xFF, 0x01].randomElement(using: &rng)! }
            let value = [1, 5, 10, 20, 25, 37, 50, 100, 200, 255, 256, 10_000, -1].randomElement(using: &rng)!
            var decision = coinmech_decision()
            decision.size = UInt32(MemoryLayout<coinmech_decision>.size)
            decision.verdict = COINMECH_VERDICT_ACCEPT.rawValue
            withUnsafeMutableBytes(of: &decision.currency) { $0.copyBytes(from: currency) }
            withUnsafeMutableBytes(of: &decision.code) { $0.copyBytes(from: code) }
            decision.value_minor = Int64(value)
            let expected = reference(currency, code, Int64(value))
            #expect(policy.allows(decision) == expected, "\(currency) \(code) \(value)")
            if expected != policy.allows(decision) { break }
            checked += 1
        }
        #expect(checked == 20_000)
    }

    @Test("one Decision reused across verdicts and chains names each decider and keeps no stale accept")
    func decisionStorageReused() throws {
        let textbook = try TestSupport.chain(textbookLinks())
        let table = try TestSupport.chain([
            LinkSpec(plugin: "sanity"), LinkSpec(name: "usd", plugin: "coin-table", configJSON: #"{"currency":"USD"}"#),
        ])
        var decision = Decision()
        textbook.decide(.coin(19.05, 2.5), into: &decision)
        #expect(decision.linkName == "cent")
        #expect(decision.acceptedValueMinor == 1)
        textbook.decide(.coin(24.26, 2.268), into: &decision)
        #expect(decision.linkName == Chain.terminalLinkName)
        #expect(decision.rejection?.reason == "unrecognized")
        #expect(decision.acceptedValueMinor == 0)
        table.decide(.coin(.nan, 5.67), into: &decision)
        #expect(decision.linkName == "sanity")
        #expect(decision.rejection?.reason == "not_finite")
        table.decide(.coin(24.26, 5.67), into: &decision)
        #expect(decision.linkName == "usd")
        #expect(decision.denomination?.code == "quarter")
        let copy = decision
        textbook.decide(.coin(21.21, 5.0), into: &decision)
        #expect(decision.linkName == "nickel")
        #expect(copy.linkName == "usd")
        #expect(copy.denomination?.code == "quarter")
    }

    @Test("a plugin sees the reading's source name as a C string, cut to whole characters within 31 bytes")
    func pluginSeesSourceName() throws {
        let dir = TestSupport.temporaryDirectory("echo")
        _ = try TestSupport.compileFixture("misbehaving", into: dir)
        let chain = try ChainBuilder(loader: TestSupport.loader(directory: dir)).build(
            generation: 1, links: [LinkSpec(plugin: "misbehaving", configJSON: #"{"mode":"echo_source"}"#)])
        var reading = Reading.coin(19.05, 2.5)
        reading.source = "front-mech"
        #expect(chain.decide(reading).rejection?.message == "front-mech")
        let longest = String(repeating: "x", count: SourceName.capacity)
        reading.source = longest
        #expect(chain.decide(reading).rejection?.message == longest)
        // 30 bytes and a two-byte "é": the é does not fit whole, so it is left out.
        reading.source = String(repeating: "m", count: 30) + "é"
        #expect(reading.source == String(repeating: "m", count: 30))
        #expect(chain.decide(reading).rejection?.message == String(repeating: "m", count: 30))
        #expect(Reading.coin(19.05, 2.5) == Reading.coin(19.05, 2.5))
        #expect(reading != Reading.coin(19.05, 2.5))
    }

    @Test("a Swift plugin writes nothing past the decision size a smaller (older) host gives it", arguments: [
        ("coin-table", #"{"currency":"USD"}"#, 24.26, 5.67, "accept"), ("sanity", "{}", Double.nan, 5.67, "reject"),
    ])
    func smallerHostDecision(plugin: String, config: String, diameter: Double, weight: Double, verdict: String) throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: plugin, configJSON: config)])
        let call = chain.links[0].validator.call
        var reading = coinmech_reading()
        reading.size = UInt32(MemoryLayout<coinmech_reading>.size)
        reading.flags = UInt32(COINMECH_READING_HAS_DIAMETER | COINMECH_READING_HAS_WEIGHT)
        reading.diameter_mm = diameter
        reading.weight_g = weight
        // An older host's decision ends inside the field after the ones this verdict needs
        // first: the accept's code for an accept, the reason for a reject.
        let hostSize = MemoryLayout<coinmech_decision>.offset(of: verdict == "accept" ? \.code : \.reason)! + 8
        let storage = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<coinmech_decision>.size, alignment: 8)
        defer { storage.deallocate() }
        storage.initializeMemory(as: UInt8.self, repeating: 0xAB, count: MemoryLayout<coinmech_decision>.size)
        storage.storeBytes(of: UInt32(hostSize), as: UInt32.self)
        storage.storeBytes(of: COINMECH_VERDICT_PASS.rawValue, toByteOffset: 4, as: UInt32.self)
        let decision = storage.assumingMemoryBound(to: coinmech_decision.self)
        call.function(call.context, &reading, decision)
        #expect(decision.pointee.verdict == (verdict == "accept" ? COINMECH_VERDICT_ACCEPT : COINMECH_VERDICT_REJECT).rawValue)
        let bytes = UnsafeRawBufferPointer(start: storage, count: MemoryLayout<coinmech_decision>.size)
        #expect(bytes[hostSize...].allSatisfy { $0 == 0xAB }, "wrote past the host's \(hostSize) bytes")
        #expect(decision.pointee.size == UInt32(hostSize))
        if verdict == "accept" {
            #expect(decision.pointee.value_minor == 25)
            #expect(decision.pointee.currency.0 == CChar(UInt8(ascii: "U")))
        } else {
            #expect(decision.pointee.reason.0 == CChar(UInt8(ascii: "n")))  // "not_finite", cut
        }
    }

    @Test("instances are destroyed when the last chain holding them is released, not before")
    func instancesLiveAsLongAsTheirChain() throws {
        let dir = TestSupport.temporaryDirectory("lease")
        _ = try TestSupport.compileFixture("misbehaving", into: dir)
        let loader = TestSupport.loader(directory: dir)
        let image = try loader.load(plugin: "misbehaving")
        guard let handle = dlopen(image.loadedPath, RTLD_NOW | RTLD_NOLOAD),
              let symbol = dlsym(handle, "fixture_destroyed_count") else {
            Issue.record("fixture not loaded")
            return
        }
        let destroyed = unsafeBitCast(symbol, to: (@convention(c) () -> Int32).self)
        var chain: Chain? = try ChainBuilder(loader: loader).build(generation: 1, links: [LinkSpec(plugin: "misbehaving", configJSON: #"{"mode":"pass"}"#)])
        let reading = chain!.decide(.coin(24.26, 5.67))  // a decision in flight keeps nothing alive
        #expect(destroyed() == 0)
        chain = nil
        #expect(destroyed() == 1)
        #expect(reading.linkName == Chain.terminalLinkName)
    }
}

@Suite("Plugins: accept, reject and pass paths")
struct PluginBehaviourTests {
    @Test("coin: accepts inside its window (±5 % default), passes outside, honours per-axis tolerance")
    func coinPlugin() throws {
        let quarter = #"{"currency":"USD","code":"quarter","value":25,"diameter_mm":24.26,"weight_g":5.67"#
        let chain = try TestSupport.chain([LinkSpec(plugin: "coin", configJSON: quarter + "}")])
        #expect(chain.decide(.coin(24.26 * 1.049, 5.67)).denomination?.code == "quarter")
        #expect(chain.decide(.coin(24.26 * 1.051, 5.67)).rejection?.reason == "unrecognized")
        #expect(chain.decide(Reading(deviceSeq: 1, channel: 3)).rejection?.reason == "unrecognized")
        let tight = try TestSupport.chain([LinkSpec(plugin: "coin", configJSON: quarter + #","weight_tolerance":0.01}"#)])
        #expect(tight.decide(.coin(24.26, 5.67 * 1.02)).rejection?.reason == "unrecognized")
        #expect(tight.decide(.coin(24.26 * 1.04, 5.67 * 1.009)).denomination?.code == "quarter")
        let thick = try TestSupport.chain([LinkSpec(plugin: "coin", configJSON: quarter + #","thickness_mm":1.75}"#)])
        #expect(thick.decide(.coin(24.26, 5.67, thickness: 2.5)).rejection?.reason == "unrecognized")
        #expect(thick.decide(.coin(24.26, 5.67, thickness: 1.76)).denomination?.code == "quarter")
    }

    @Test("coin-table: every USD, EUR and GBP coin at nominal is accepted as itself", arguments: ["USD", "EUR", "GBP"])
    func coinTableNominal(currency: String) throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "coin-table", configJSON: #"{"currency":"\#(currency)"}"#)])
        for spec in CoinTables.table(for: currency)! {
            let decision = chain.decide(.coin(spec.diameterMM, spec.weightG, thickness: spec.thicknessMM))
            #expect(decision.denomination == Denomination(currency: currency, code: spec.code, valueMinor: spec.valueMinor))
        }
        #expect(chain.decide(.coin(40, 20)).rejection?.reason == "unrecognized")
    }

    @Test("coin-table: the EUR 50c / €1 overlap is reported at load time, unless the sensors can tell them apart")
    func eurOverlapReported() throws {
        var warnings: [String] = []
        _ = try ChainBuilder(loader: TestSupport.loader()).build(
            generation: 1, links: [LinkSpec(name: "eur", plugin: "coin-table", configJSON: #"{"currency":"EUR"}"#)]) { warnings.append($0) }
        #expect(warnings.contains { $0.hasPrefix("chain link 1 'eur': windows of EUR_50c and EUR_1 overlap (centres ") && $0.hasSuffix(
            "σ apart): a reading in both is accepted only if one is nearer by 1.5σ, else returned as ambiguous") }, "\(warnings)")
        // A diameter sensor of 0.2 % (0.05 mm) separates them by far more than two windows.
        var none: [String] = []
        _ = try ChainBuilder(loader: TestSupport.loader()).build(
            generation: 1, links: [LinkSpec(plugin: "coin-table", configJSON: #"{"currency":"EUR","sensor_noise":{"diameter":0.002}}"#)]) { none.append($0) }
        #expect(!none.contains { $0.contains("EUR_50c and EUR_1") })
    }

    @Test("coin-table: a reading near the 50c or the €1 goes to the nearer, not the first row")
    func eurOverlapResolved() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "coin-table", configJSON: #"{"currency":"EUR"}"#)])
        // The 50c row comes first in the table, but €1 is nearer.
        let nearOne = chain.decide(.coin(23.40, 7.55))
        #expect(nearOne.denomination?.code == "EUR_1")
        let nearFifty = chain.decide(.coin(24.10, 7.74))
        #expect(nearFifty.denomination?.code == "EUR_50c")
    }

    @Test("coin-table: a measured thickness counts, a missing one does not; NaN and infinity match nothing")
    func coinTableThicknessAndNonFinite() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "coin-table", configJSON: #"{"currency":"USD"}"#)])
        #expect(chain.decide(.coin(24.26, 5.67)).denomination?.code == "quarter")
        #expect(chain.decide(.coin(24.26, 5.67, thickness: 1.75)).denomination?.code == "quarter")
        // 1.75 mm with σ 0.046 mm (±5 % mint spread as ±3σ, 2 % sensor noise): 2.05 mm is 6.6σ off.
        #expect(chain.decide(.coin(24.26, 5.67, thickness: 2.05)).rejection?.reason == "unrecognized")
        let nonFinite: [(Double, Double, Double?)] = [
            (.nan, 5.67, nil), (24.26, .infinity, nil), (-.infinity, 5.67, nil), (24.26, 5.67, .nan), (24.26, 5.67, .infinity),
        ]
        for (d, w, t) in nonFinite {
            #expect(chain.decide(.coin(d, w, thickness: t)).rejection?.reason == "unrecognized", "d \(d) w \(w) t \(String(describing: t))")
        }
    }

    @Test("coin-table: unknown denominations and currencies are configuration errors")
    func coinTableConfigErrors() throws {
        #expect(throws: ChainBuildError.self) {
            try TestSupport.chain([LinkSpec(plugin: "coin-table", configJSON: #"{"currency":"USD","denominations":["dollar"]}"#)])
        }
        let subset = try TestSupport.chain([LinkSpec(plugin: "coin-table", configJSON: #"{"currency":"USD","denominations":["quarter"]}"#)])
        #expect(subset.decide(.coin(19.05, 2.5)).rejection?.reason == "unrecognized")
        #expect(subset.decide(.coin(24.26, 5.67)).denomination?.code == "quarter")
    }

    @Test("sanity: rejects NaN, infinite, negative and impossible readings with a reason; passes the plausible")
    func sanity() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "sanity")])
        #expect(chain.decide(.coin(.nan, 5)).rejection == Rejection(reason: "not_finite", message: "diameter is not a finite number"))
        #expect(chain.decide(.coin(24, .infinity)).rejection?.reason == "not_finite")
        #expect(chain.decide(.coin(-24, 5)).rejection == Rejection(reason: "non_positive", message: "diameter is zero or negative"))
        #expect(chain.decide(.coin(24, 0)).rejection?.reason == "non_positive")
        #expect(chain.decide(.coin(80, 5)).rejection == Rejection(reason: "out_of_range", message: "diameter outside 5.0–50.0 mm"))
        #expect(chain.decide(.coin(24, 5, thickness: 14)).rejection?.reason == "out_of_range")
        #expect(chain.decide(Reading(deviceSeq: 1)).rejection?.reason == "empty_reading")
        let plausible = chain.decide(.coin(24, 5))
        #expect(plausible.rejection?.reason == "unrecognized")  // sanity passed it on
        #expect(chain.links[0].statistics.snapshot.passes == 1)
    }

    @Test("repeat-guard: the same coin again within the window is rejected; after it, or different, passes")
    func repeatGuard() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "repeat-guard", configJSON: #"{"window_ms":300,"min_interval_ms":20}"#)])
        #expect(chain.decide(.coin(24.26, 5.67, at: 1000)).linkName == Chain.terminalLinkName)
        #expect(chain.decide(.coin(24.261, 5.671, at: 1100)).rejection?.reason == "repeat")
        #expect(chain.decide(.coin(19.05, 2.5, at: 1200)).linkName == Chain.terminalLinkName)
        #expect(chain.decide(.coin(24.26, 5.67, at: 1700)).linkName == Chain.terminalLinkName)
        #expect(chain.decide(.coin(17.91, 2.268, at: 1705)).rejection?.reason == "too_fast")
    }

    @Test("weight-floor (plain C): rejects light readings, passes the rest and readings without weight")
    func weightFloor() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "weight-floor", configJSON: #"{"min_weight_g": 1.5}"#)])
        #expect(chain.decide(.coin(24, 0.9)).rejection == Rejection(reason: "too_light", message: "lighter than 1.5 g: washer, token or foil?"))
        #expect(chain.decide(.coin(24, 5.67)).linkName == Chain.terminalLinkName)
        #expect(chain.decide(Reading(deviceSeq: 1, channel: 2)).linkName == Chain.terminalLinkName)
        #expect(chain.links[0].origin.description == #"{"min_weight_g":1.5}"#)
    }
}
