import CoinMechFleet
@testable import CoinMechFleetWeb
import XCTest

/// The dashboard's pages as pure functions: escaping, the figures the browser test reads, money
/// and time formatting, the credit plot. Expected strings are written out by hand.
final class FleetPagesTests: XCTestCase {
    /// 2026-11-26 17:40:05 UTC (`date -u -d '2026-11-26 17:40:05' +%s`).
    static let now = 1_795_714_805.0
    static let hostile = "<script>alert(\"x\")</script>"

    static func usd(_ minor: Int64) -> FleetViews.Money { FleetViews.Money(currency: "USD", minor: minor) }
    static func eur(_ minor: Int64) -> FleetViews.Money { FleetViews.Money(currency: "EUR", minor: minor) }

    static func line(cabinet: String = "c-1", state: String = "online", cashBox: [FleetViews.Money] = [usd(1235)],
                     today: [FleetViews.Money] = [], alerts: [String] = []) -> FleetViews.CabinetLine {
        FleetViews.CabinetLine(cabinet: cabinet, site: "paris-nord", state: state, stateSince: now - 180, stateReason: state == "offline" ? "lost" : nil,
                               cashBox: cashBox, today: today, openAlerts: alerts, storedSeq: 812)
    }

    static func alert(id: Int64 = 7, detail: String = "coin stuck", ackedBy: String? = nil) -> FleetViews.Alert {
        FleetViews.Alert(id: id, cabinet: "c-1", kind: "jam", detail: detail, opened: now - 600, closed: nil, ackedBy: ackedBy)
    }

    static func cabinetPage(collections: [FleetViews.Collection] = [], pending: (seq: Int64, money: [FleetViews.Money])? = nil,
                            hourly: [FleetViews.HourlyCredit] = []) -> FleetViews.CabinetPage {
        FleetViews.CabinetPage(
            now: now, line: line(),
            recentEvents: [FleetViews.EventLine(seq: 812, time: now - 5, kind: "coin", summary: "USD_25 25 credited")],
            counters: [FleetViews.Counter(name: "credited", sinceCollection: 12, lifetime: 3400),
                       FleetViews.Counter(name: "credited_value", sinceCollection: 1235, lifetime: 98_765)],
            collections: collections, alerts: [alert(detail: hostile)], hourly: hourly,
            commands: [FleetViews.CommandLine(id: "5f0c", name: "status", args: "{}", by: "alice", sent: now - 60, outcome: "ok")],
            pendingCollect: pending)
    }

    // MARK: Escaping and scripts

    func testFleetPageShowsHostileAlertDetailOnlyEscaped() {
        let html = FleetPages.fleet(FleetViews.FleetPage(now: Self.now, cabinets: [Self.line(alerts: ["jam"])], openAlerts: [Self.alert(detail: Self.hostile)]),
                                    user: "<b>bob</b>", admin: false)
        XCTAssertTrue(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"))
        XCTAssertTrue(html.contains("&lt;b&gt;bob&lt;/b&gt;"))
        XCTAssertFalse(html.contains("<script"))
        XCTAssertFalse(html.contains("<b>bob"))
    }

    func testEscapeCoversAllFiveCharacters() {
        XCTAssertEqual(FleetPages.escape(#"a&b<c>d"e'f"#), "a&amp;b&lt;c&gt;d&quot;e&#39;f")
    }

    func testNoPageContainsAScript() {
        let pages = [
            FleetPages.login(error: Self.hostile, next: Self.hostile),
            FleetPages.fleet(FleetViews.FleetPage(now: Self.now, cabinets: [Self.line()], openAlerts: [Self.alert(detail: Self.hostile)]), user: "bob", admin: true),
            FleetPages.cabinet(Self.cabinetPage(), user: "bob", admin: true, message: Self.hostile),
            FleetPages.notFound(Self.hostile),
            FleetPages.error(Self.hostile),
        ]
        for page in pages {
            XCTAssertFalse(page.lowercased().contains("<script"))
            XCTAssertTrue(page.hasPrefix("<!DOCTYPE html>\n"))
            XCTAssertTrue(page.contains("<meta charset=\"utf-8\">"))
            XCTAssertTrue(page.contains("<meta name=\"viewport\""))
        }
    }

    func testCabinetIdInAURLIsPercentEncoded() {
        XCTAssertEqual(FleetPages.pathSegment("c-0042_x"), "c-0042_x")
        XCTAssertEqual(FleetPages.pathSegment("a b/../<é"), "a%20b%2F%2E%2E%2F%3C%C3%A9")
        let html = FleetPages.fleet(FleetViews.FleetPage(now: Self.now, cabinets: [Self.line(cabinet: "x/..")], openAlerts: []), user: "bob", admin: false)
        XCTAssertTrue(html.contains("<a href=\"/cabinet/x%2F%2E%2E\">x/..</a>"))
    }

    // MARK: Figures for the browser test

    func testFleetRowCarriesStateAndSortedCurrencyPairs() {
        let html = FleetPages.fleet(FleetViews.FleetPage(now: Self.now, cabinets: [Self.line(cashBox: [Self.usd(1235), Self.eur(200)])], openAlerts: []),
                                    user: "bob", admin: false)
        XCTAssertTrue(html.contains("<title>CoinMech fleet</title>"))
        XCTAssertTrue(html.contains("<tr data-cabinet=\"c-1\" data-state=\"online\">"))
        XCTAssertTrue(html.contains("data-cash-box=\"EUR:200;USD:1235\">12.35 USD, 2.00 EUR</td>"))
        XCTAssertTrue(html.contains("data-today=\"\">—</td>"))
    }

    func testFleetRowShowsRelativeSinceWithAbsoluteUTCTitle() {
        let html = FleetPages.fleet(FleetViews.FleetPage(now: Self.now, cabinets: [Self.line(state: "offline")], openAlerts: []), user: "bob", admin: false)
        XCTAssertTrue(html.contains("<span class=\"offline\">offline (lost)</span> for <time datetime=\"2026-11-26T17:37:05Z\" title=\"2026-11-26 17:37:05 UTC\">3 min</time>"))
    }

    func testCabinetPageCountersAndStateLineCarryFigures() {
        let html = FleetPages.cabinet(Self.cabinetPage(), user: "bob", admin: false, message: nil)
        XCTAssertTrue(html.contains("<section id=\"counters\">"))
        XCTAssertTrue(html.contains("<tr data-counter=\"credited\" data-since=\"12\" data-lifetime=\"3400\">"))
        XCTAssertTrue(html.contains("<tr data-counter=\"credited_value\" data-since=\"1235\" data-lifetime=\"98765\"><td>credited_value</td><td class=\"num\">12.35 USD</td><td class=\"num\">987.65 USD</td></tr>"))
        XCTAssertTrue(html.contains("id=\"state\" class=\"stateline\" data-cabinet=\"c-1\" data-state=\"online\" data-cash-box=\"USD:1235\""))
    }

    // MARK: Forms

    func testAckedAlertShowsWhoAckedInsteadOfAForm() {
        let html = FleetPages.fleet(FleetViews.FleetPage(now: Self.now, cabinets: [], openAlerts: [Self.alert(id: 7), Self.alert(id: 8, ackedBy: "carol")]),
                                    user: "bob", admin: false)
        XCTAssertTrue(html.contains("<form class=\"inline\" method=\"post\" action=\"/alerts/7/ack\">"))
        XCTAssertTrue(html.contains("<button type=\"submit\">Acknowledge</button>"))
        XCTAssertFalse(html.contains("action=\"/alerts/8/ack\""))
        XCTAssertTrue(html.contains("<td>acked by carol</td>"))
        XCTAssertTrue(html.contains("action=\"/logout\""))
    }

    func testCommandsFormAppearsOnlyForAdmins() {
        let admin = FleetPages.cabinet(Self.cabinetPage(), user: "bob", admin: true, message: nil)
        let operatorPage = FleetPages.cabinet(Self.cabinetPage(), user: "bob", admin: false, message: nil)
        XCTAssertTrue(admin.contains("<form method=\"post\" action=\"/cabinet/c-1/commands\">"))
        XCTAssertTrue(admin.contains("<option value=\"inhibit_on\">inhibit_on</option><option value=\"inhibit_off\">inhibit_off</option><option value=\"status\">status</option><option value=\"totals\">totals</option>"))
        XCTAssertFalse(operatorPage.contains("/commands"))
        XCTAssertFalse(operatorPage.contains("<select"))
    }

    func testCollectionFormComparesWithThePendingCollectElseTheCashBox() {
        let pending = FleetPages.cabinet(Self.cabinetPage(pending: (seq: 790, money: [Self.eur(1235)])), user: "bob", admin: false, message: nil)
        XCTAssertTrue(pending.contains("<form method=\"post\" action=\"/cabinet/c-1/collections\">"))
        XCTAssertTrue(pending.contains("Compared with the cabinet&#39;s collection at seq 790: 12.35 EUR."))
        XCTAssertTrue(pending.contains("<input name=\"currency\" value=\"EUR\""))
        let none = FleetPages.cabinet(Self.cabinetPage(), user: "bob", admin: false, message: nil)
        XCTAssertTrue(none.contains("No collection recorded by the cabinet since the last one: compared with the cash box now (12.35 USD)."))
        XCTAssertTrue(none.contains("<input name=\"currency\" value=\"USD\""))
        XCTAssertTrue(none.contains("<input name=\"amount\""))
    }

    func testCollectionWithADifferenceIsHighlightedAndOneWithoutIsNot() {
        let short = FleetViews.Collection(id: 3, time: Self.now - 3600, by: "dave", counted: Self.usd(1230), ledger: Self.usd(1235), difference: -5, ledgerSeq: 790)
        let even = FleetViews.Collection(id: 2, time: Self.now - 90000, by: "dave", counted: Self.usd(500), ledger: Self.usd(500), difference: 0, ledgerSeq: 400)
        let html = FleetPages.cabinet(Self.cabinetPage(collections: [short, even]), user: "bob", admin: false, message: nil)
        XCTAssertTrue(html.contains("<tr class=\"diff\" data-collection=\"3\""))
        XCTAssertTrue(html.contains("<td class=\"num\">-0.05 USD</td>"))
        XCTAssertTrue(html.contains("12.35 USD (seq 790)"))
        XCTAssertTrue(html.contains("<tr data-collection=\"2\""))
    }

    func testMessageIsShownEscapedInANoticeBox() {
        let html = FleetPages.cabinet(Self.cabinetPage(), user: "bob", admin: false, message: "Recorded <12.35 USD>")
        XCTAssertTrue(html.contains("<div class=\"notice\" role=\"status\">Recorded &lt;12.35 USD&gt;</div>"))
    }

    func testLoginFormPostsNameAndPasswordAndKeepsNextEscaped() {
        let html = FleetPages.login(error: "wrong password", next: "/cabinet/c-1?a=1&b=\"2\"")
        XCTAssertTrue(html.contains("<form method=\"post\" action=\"/login\">"))
        XCTAssertTrue(html.contains("<input name=\"name\""))
        XCTAssertTrue(html.contains("<input name=\"password\" type=\"password\""))
        XCTAssertTrue(html.contains("<input type=\"hidden\" name=\"next\" value=\"/cabinet/c-1?a=1&amp;b=&quot;2&quot;\">"))
        XCTAssertTrue(html.contains("wrong password"))
        XCTAssertFalse(FleetPages.login(error: nil, next: "/").contains("role=\"alert\""))
    }

    // MARK: Money and time

    func testMoneyFormatsNegativesAndSubUnitValuesWithTwoDecimals() {
        XCTAssertEqual(FleetPages.formatMoney(Self.usd(1235)), "12.35 USD")
        XCTAssertEqual(FleetPages.formatMoney(Self.usd(-5)), "-0.05 USD")
        XCTAssertEqual(FleetPages.formatMoney(Self.usd(7)), "0.07 USD")
        XCTAssertEqual(FleetPages.formatMoney(Self.usd(0)), "0.00 USD")
        XCTAssertEqual(FleetPages.formatMoney(Self.eur(-123_456)), "-1234.56 EUR")
        XCTAssertEqual(FleetPages.formatMoney(FleetViews.Money(currency: "USD", minor: .min)), "-92233720368547758.08 USD")
    }

    func testMoneyListsJoinWithCommaAndEmptyIsADash() {
        XCTAssertEqual(FleetPages.formatMoney([Self.usd(100), Self.eur(250)]), "1.00 USD, 2.50 EUR")
        XCTAssertEqual(FleetPages.formatMoney([]), "—")
        XCTAssertEqual(FleetPages.figures([]), "")
    }

    func testUTCTimesUseTheCivilCalendarOnBothSidesOf1970() {
        XCTAssertEqual(FleetPages.utc(Self.now), "2026-11-26 17:40:05 UTC")
        XCTAssertEqual(FleetPages.utc(Self.now + 0.999), "2026-11-26 17:40:05 UTC")
        XCTAssertEqual(FleetPages.utc(0), "1970-01-01 00:00:00 UTC")
        XCTAssertEqual(FleetPages.utc(-1), "1969-12-31 23:59:59 UTC")
        XCTAssertEqual(FleetPages.utc(951_782_400), "2000-02-29 00:00:00 UTC")
        XCTAssertEqual(FleetPages.utc(.nan), "—")
    }

    // MARK: The credit plot

    func testPlotPlacesABarInTheHourOfItsCredit() {
        // 2026-11-26 10:00 UTC is hour 160 of the 168 ending with 17:00: x = 8 + 160 × 704/168.
        let svg = CreditPlot.svg([FleetViews.HourlyCredit(hour: 1_795_687_200, money: Self.usd(1235))], now: Self.now)
        XCTAssertTrue(svg.contains("role=\"img\""))
        XCTAssertTrue(svg.contains("<title>Credit per hour in USD"))
        XCTAssertTrue(svg.contains("<rect class=\"bar\" x=\"678.5\" y=\"32.0\" width=\"3.4\" height=\"148.0\" fill=\"#3a6ea5\" data-hour=\"1795687200\" data-minor=\"1235\">"))
        XCTAssertTrue(svg.contains("<title>2026-11-26 10:00:00 UTC: 12.35 USD</title>"))
        XCTAssertTrue(svg.contains("max 12.35 USD"))
        // The first midnight in the window (it starts 2026-11-19 18:00) is six hours in.
        XCTAssertTrue(svg.contains("<line x1=\"33.1\" y1=\"180.0\" x2=\"33.1\" y2=\"184.0\" stroke=\"#555\"/><text x=\"35.1\" y=\"195.0\" font-size=\"11\" fill=\"#555\">11-20</text>"))
        XCTAssertTrue(svg.contains(">11-26</text>"))
        XCTAssertFalse(svg.contains(">11-27</text>"))
    }

    func testPlotDrawsTheCurrencyWithTheMostCreditAndNamesTheOthers() {
        let svg = CreditPlot.svg([FleetViews.HourlyCredit(hour: 1_795_687_200, money: Self.usd(100)),
                                  FleetViews.HourlyCredit(hour: 1_795_687_200, money: Self.eur(300))], now: Self.now)
        XCTAssertTrue(svg.contains("Credit per hour in EUR"))
        XCTAssertTrue(svg.contains("also USD, not drawn"))
        XCTAssertTrue(svg.contains("data-minor=\"300\""))
        XCTAssertFalse(svg.contains("data-minor=\"100\""))
    }

    func testPlotWithoutCreditInTheWindowShowsTheEmptyText() {
        // 2026-11-18 10:00 UTC is more than 7 days before now.
        for hourly in [[], [FleetViews.HourlyCredit(hour: 1_794_996_000, money: Self.usd(500))]] {
            let svg = CreditPlot.svg(hourly, now: Self.now)
            XCTAssertTrue(svg.contains("no credit in the last 7 days"))
            XCTAssertTrue(svg.contains("role=\"img\""))
            XCTAssertTrue(svg.contains("<title>"))
            XCTAssertFalse(svg.contains("class=\"bar\""))
        }
    }

    func testPlotIsDeterministic() {
        let hourly = [FleetViews.HourlyCredit(hour: 1_795_687_200, money: Self.usd(100)), FleetViews.HourlyCredit(hour: 1_795_687_200, money: Self.eur(100))]
        XCTAssertEqual(CreditPlot.svg(hourly, now: Self.now), CreditPlot.svg(hourly.reversed(), now: Self.now))
    }
}
