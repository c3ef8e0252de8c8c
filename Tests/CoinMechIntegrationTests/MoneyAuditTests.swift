import CoinFacts
import CoinMechAudit
import CoinMechLedger
import CoinMechModel
import CoinSimCore
import Testing

/// The judge of every money test, judged: a ledger that is right passes, and one mutated each way
/// a bug could get money wrong is caught. A judge that cannot fail proves nothing.
@Suite("MoneyAudit catches each way a ledger can be wrong", .serialized)
struct MoneyAuditTests {
    /// One real session: coinsim's truth and coinmechd's ledger, both right.
    static func session() throws -> (truth: GroundTruth, events: [LedgerEvent], boots: [Int64: UInt64]) {
        let harness = try DaemonHarness()
        try harness.startSimulator("coins: 30\nrate_per_s: 15\nseed: 23\nmix: {quarter: 2, dime: 1, nickel: 1}\nothers: {slug: 0.15}\nfaults: {bounce: 0.1}\n")
        try harness.startDaemon()
        let truth = try harness.simulatorTruth()
        #expect(try harness.stopDaemon() == 0, "\(harness.daemonLog)")
        let ledger = try harness.ledger()
        return (truth, try ledger.events(since: 0, limit: 100_000), try ledger.boots(source: "serial"))
    }

    @Test("the right ledger is clean; a lost, doubled, phantom, wrongly valued or wrongly placed coin is each caught")
    func mutations() throws {
        let (truth, events, boots) = try Self.session()
        let clean = MoneyAudit(truths: [truth], events: events, boots: boots)
        #expect(clean.isClean, "\(clean.problems)")
        let coins = events.enumerated().filter { $0.element.kind == "coin" }
        #expect(coins.count >= 5, "too few credited coins to mutate")
        let returned = truth.coins.filter { $0.fate == "returned" && $0.devseq > 0 }
        #expect(!returned.isEmpty, "no returned coin to credit wrongly")
        let first = try #require(coins.first)
        let key = MoneyAudit.Key(boot: boots[first.element.epoch!]!, devseq: UInt64(first.element.deviceSeq!))

        // Lost: the coin's credit is gone.
        var lost = events
        lost.remove(at: first.offset)
        #expect(MoneyAudit(truths: [truth], events: lost, boots: boots).lost == [key])

        // Doubled: credited a second time.
        var doubled = events
        var again = first.element
        again.seq = (events.last?.seq ?? 0) + 1
        doubled.append(again)
        #expect(MoneyAudit(truths: [truth], events: doubled, boots: boots).doubled == [key])

        // Phantom: a returned coin credited.
        var phantom = events
        var wrongCoin = first.element
        wrongCoin.deviceSeq = Int64(try #require(returned.first).devseq)
        wrongCoin.seq = (events.last?.seq ?? 0) + 1
        phantom.append(wrongCoin)
        #expect(!MoneyAudit(truths: [truth], events: phantom, boots: boots).phantom.isEmpty)

        // Wrong value: the right coin at another value, or in another currency.
        var wrongValue = events
        wrongValue[first.offset].valueMinor = (first.element.valueMinor ?? 0) + 75
        #expect(MoneyAudit(truths: [truth], events: wrongValue, boots: boots).wrongValue == [key])
        var wrongCurrency = events
        wrongCurrency[first.offset].currency = "EUR"
        #expect(MoneyAudit(truths: [truth], events: wrongCurrency, boots: boots).wrongValue == [key])

        // Wrong epoch: the credit recorded under another boot of the mech.
        var wrongEpoch = events
        wrongEpoch[first.offset].epoch = 77
        var otherBoots = boots
        otherBoots[77] = 9_999
        let misplaced = MoneyAudit(truths: [truth], events: wrongEpoch, boots: otherBoots)
        #expect(misplaced.lost == [key])
        #expect(!misplaced.isClean)
        // …or under an epoch the ledger names no boot for.
        #expect(MoneyAudit(truths: [truth], events: wrongEpoch, boots: boots).unjoinable == 1)
    }

    @Test("coinsim's face values, written from the mints' lists, agree with the tables plugins credit from")
    func faceValuesAgreeWithTables() {
        for spec in CoinTables.usd + CoinTables.eur + CoinTables.gbp {
            #expect(FaceValues.value(currency: spec.currency, code: spec.code) == spec.valueMinor, "\(spec.currency) \(spec.code)")
        }
        for coin in FaceValues.all {
            #expect(CirculatingValues.byCurrency[coin.currency]?.contains(coin.valueMinor) == true, "\(coin)")
            #expect(CabinetCoins.mint(coin.currency)?.contains(Denomination(currency: coin.currency, code: coin.code, valueMinor: coin.valueMinor)) == true, "\(coin)")
        }
        #expect(FaceValues.all.count == CabinetCoins.allMint.coins.count)
    }
}
