@testable import coinctl
import CoinMechModel
import Foundation
import Testing

/// `coinctl watch`'s lines for the customer's credit and money out, from events as the ledger
/// writes them (detail: an object of strings). Before, they printed as `kind key=value …`.
@Suite("coinctl watch: credit and payout events read as sentences")
struct WatchFormatTests {
    /// The line without its `#seq HH:mm:ss ` head (the clock is local time).
    static func line(_ kind: EventKind, currency: String? = "USD", value: Int64? = nil, _ detail: String,
                     payoutCurrencies: [String: String] = [:]) -> String {
        let event = LedgerEvent(seq: 41, time: 1_795_286_946, kind: kind.rawValue, source: "mdb", currency: currency, valueMinor: value, detail: detail)
        let text = Format.event(event, totals: ["USD": 325], payoutCurrencies: payoutCurrencies)
        #expect(text.hasPrefix("#41 "), "\(text)")
        return String(text.split(separator: " ", maxSplits: 2)[2])
    }

    @Test("a sale, its change due, a refund and an expiry: amount, item, request id, the balance left; never the word CREDIT")
    func creditMoves() {
        let sale = Self.line(.creditSpent, value: 150, #"{"account":"mdb","balance_minor":"15","by":"kiosk","item":"A4","request_id":"s-7"}"#)
        #expect(sale == "SALE USD 1.50 for A4 (sale s-7); credit left USD 0.15")
        let due = Self.line(.creditReturned, value: 15, #"{"account":"mdb","balance_minor":"0","by":"kiosk","request_id":"c-7"}"#)
        #expect(due == "CHANGE DUE USD 0.15: the credit paid back (return c-7); credit left USD 0.00")
        let refund = Self.line(.creditRefunded, value: 150, #"{"account":"mdb","balance_minor":"165","by":"kiosk","request_id":"s-7"}"#)
        #expect(refund == "SALE REFUNDED USD 1.50 (sale s-7); credit now USD 1.65")
        let expired = Self.line(.creditExpired, value: 40, #"{"account":"mdb","balance_minor":"0","by":"coinmechd","request_id":"expire-3"}"#)
        #expect(expired == "EXPIRED USD 0.40 of credit left standing (expire-3); credit now USD 0.00")
        let opened = Self.line(.creditOpened, value: 0, #"{"account":"mdb","balance_minor":"0"}"#)
        #expect(opened == "credit account mdb opened in USD")
        // `make demo-check` finds credited coins by " CREDIT ": only a coin's line says it.
        for text in [sale, due, refund, expired, opened] { #expect(!(" " + text).contains(" CREDIT "), "\(text)") }
    }

    @Test("a payout: asked with its plan, each coin paid, done, short or failed with what is owed")
    func payouts() {
        let asked = Self.line(.payoutRequested, currency: nil, #"""
            {"amount_minor":"35","by":"kiosk","credit_account":"mdb","currency":"USD","device":"CMS 1; 0=USD5,1=USD10,2=USD25","plan":"1×USD25 1×USD10","request_id":"c-7"}
            """#)
        #expect(asked == "PAYOUT USD 0.35 asked (payout c-7): to pay 1 × USD25, 1 × USD10")
        let paying = Self.line(.payoutDispensing, currency: nil,
                               #"{"coin_id":"USD25","count":"1","request_id":"c-7","step":"1","tube_before":"11","type":"2","value_minor":"25"}"#)
        #expect(paying == "PAYING 1 × USD25 (payout c-7, step 1; 11 in it before)")
        // A settlement names no currency: the watch remembers the one its payout was asked in.
        let settled = #"{"after_restart":"false","debt_minor":"0","paid":"1:1,2:1","paid_minor":"35","request_id":"c-7"}"#
        #expect(Self.line(.payoutDone, currency: nil, settled, payoutCurrencies: ["c-7": "USD"]) == "PAID USD 0.35 (payout c-7, done)")
        #expect(Self.line(.payoutDone, currency: nil, settled, payoutCurrencies: ["c-6": "EUR"]) == "PAID 0.35 (payout c-7, done)")
        let short = Self.line(.payoutPartial, currency: nil, #"{"after_restart":"true","debt_minor":"10","paid":"2:1","paid_minor":"25","reason":"tube jam","request_id":"c-7"}"#,
                              payoutCurrencies: ["c-7": "USD"])
        #expect(short == "PAID SHORT: USD 0.25 paid, USD 0.10 owed to the customer (payout c-7): tube jam")
        let failed = Self.line(.payoutFailed, currency: nil, #"{"debt_minor":"35","paid":"","paid_minor":"0","reason":"no answer","request_id":"c-8"}"#)
        #expect(failed == "PAYOUT FAILED: 0.00 paid, 0.35 owed to the customer (payout c-8): no answer")
        let tubes = Self.line(.tubesCounted, currency: nil, #"{"cause":"payout","tubes":"0:18,1:10,2:14"}"#)
        #expect(tubes == "tubes counted (payout): 18 of type 0, 10 of type 1, 14 of type 2")
    }

    @Test("a coin still reads CREDIT with the running totals")
    func coinUnchanged() {
        let coin = Self.line(.coin, value: 25, #"{"coin_id":"USD25","position":"3","routing":"tube"}"#)
        #expect(coin.hasPrefix("CREDIT USD ") && coin.contains("[USD25 position 3] kept in its change tube") && coin.hasSuffix("total USD 3.25"), "\(coin)")
    }
}
