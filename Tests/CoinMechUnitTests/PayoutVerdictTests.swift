import CoinMechAudit
import CoinMechModel
import Testing

/// Money out judged against the journal: a value the changer paid choosing its own coins is
/// held to its own value step, not to a budget summed over the run. Figures by hand.
@Suite("Payout verdict: each value the changer paid held to its own journalled step")
struct PayoutVerdictTests {
    /// Two payouts, each one value step of 50: quarters are type 2, dimes type 1.
    static func journal(_ steps: [Int64]) -> PayoutJournalTally {
        let records = steps.enumerated().map { index, value in
            let order = PayoutOrder(requestID: "r\(index)", amountMinor: value, currency: "USD", by: "test")
            return PayoutRecord(order: order, source: "mdb", requestedSeq: Int64(index + 1), settledSeq: nil, steps: [.value(value, tubesBefore: [0, 9, 9])],
                                settlement: PayoutSettlement(outcome: .done, paidMinor: value, debtMinor: 0, paidCoins: [:], reason: nil, afterRestart: false))
        }
        return PayoutJournalTally(records)
    }

    @Test("each value paid as asked: clean")
    func asAsked() {
        let paid = [DeviceValuePayout(askedMinor: 50, paidMinor: 50, coins: [2: 2]), DeviceValuePayout(askedMinor: 50, paidMinor: 50, coins: [1: 5])]
        let verdict = PayoutVerdict(Self.journal([50, 50]), devicePaid: [2: 2, 1: 5], dispenses: 0, inventoryMismatch: [], valuePayouts: paid)
        #expect(verdict.paidTwice == 0)
    }

    @Test("one step overpaid and the next underpaid: paid twice, though together they make what the journal asked")
    func overpaidOne() {
        let paid = [DeviceValuePayout(askedMinor: 50, paidMinor: 75, coins: [2: 3]), DeviceValuePayout(askedMinor: 50, paidMinor: 25, coins: [2: 1])]
        let verdict = PayoutVerdict(Self.journal([50, 50]), devicePaid: [2: 4], dispenses: 0, inventoryMismatch: [], valuePayouts: paid)
        #expect(verdict.paidTwice == 3)
    }

    @Test("a value paid that no journalled step asked (one step taken twice): paid twice")
    func takenTwice() {
        let paid = [DeviceValuePayout(askedMinor: 50, paidMinor: 50, coins: [2: 2]), DeviceValuePayout(askedMinor: 50, paidMinor: 50, coins: [2: 2])]
        let verdict = PayoutVerdict(Self.journal([50, 100]), devicePaid: [2: 4], dispenses: 0, inventoryMismatch: [], valuePayouts: paid)
        #expect(verdict.paidTwice == 2)
    }

    @Test("a value no step asked counts its own coins only: the payouts after it still match their steps")
    func unmatchedDoesNotCascade() {
        let paid = [DeviceValuePayout(askedMinor: 30, paidMinor: 30, coins: [2: 1, 0: 1]), DeviceValuePayout(askedMinor: 50, paidMinor: 50, coins: [2: 2]),
                    DeviceValuePayout(askedMinor: 100, paidMinor: 100, coins: [2: 4])]
        let verdict = PayoutVerdict(Self.journal([50, 100]), devicePaid: [2: 7, 0: 1], dispenses: 0, inventoryMismatch: [], valuePayouts: paid)
        #expect(verdict.paidTwice == 2)
    }

    @Test("a journalled step never sent is skipped, and a DISPENSE's coins are still held to its count")
    func skippedAndDispensed() {
        let paid = [DeviceValuePayout(askedMinor: 100, paidMinor: 100, coins: [2: 4])]
        // The 50 step was journalled and never sent; one dime left with no step asking for it.
        let verdict = PayoutVerdict(Self.journal([50, 100]), devicePaid: [2: 4, 1: 1], dispenses: 0, inventoryMismatch: [], valuePayouts: paid)
        #expect(verdict.paidTwice == 1)
    }
}
