import CoinMechFleet

/// The dashboard's pages: pure functions from the plain values `FleetViews` reads to complete
/// HTML5 documents, so they are tested without a server or a database. No JavaScript: every
/// action is a plain form POST, and the browser test reads figures from `data-` attributes.
public enum FleetPages {
    public static func login(error: String?, next: String) -> String {
        var b = "<h1>CoinMech fleet</h1>\n"
        if let error { b += "<p class=\"error\" role=\"alert\">\(escape(error))</p>\n" }
        b += """
            <form method="post" action="/login">
            <p><label>Name <input name="name" autocomplete="username" required autofocus></label></p>
            <p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
            <input type="hidden" name="next" value="\(escape(next))">
            <p><button type="submit">Log in</button></p>
            </form>

            """
        return document(title: "CoinMech fleet: log in", user: nil, body: b)
    }

    public static func fleet(_ page: FleetViews.FleetPage, user: String, admin: Bool) -> String {
        var b = "<h1>CoinMech fleet</h1>\n<section id=\"cabinets\"><h2>Cabinets</h2>\n"
        if page.cabinets.isEmpty {
            b += "<p>No cabinet heard yet.</p>\n"
        } else {
            b += "<table><thead><tr><th>Cabinet</th><th>Site</th><th>State</th><th>Cash box</th><th>Today</th><th>Open alerts</th></tr></thead><tbody>\n"
            for c in page.cabinets {
                b += "<tr data-cabinet=\"\(escape(c.cabinet))\" data-state=\"\(escape(c.state))\">"
                b += "<td>\(cabinetLink(c.cabinet))</td><td>\(escape(c.site))</td><td>\(stateText(c, now: page.now))</td>"
                b += "<td class=\"num\" data-cash-box=\"\(escape(figures(c.cashBox)))\">\(escape(formatMoney(c.cashBox)))</td>"
                b += "<td class=\"num\" data-today=\"\(escape(figures(c.today)))\">\(escape(formatMoney(c.today)))</td>"
                b += c.openAlerts.isEmpty ? "<td>—</td>" : "<td class=\"alert\">\(escape(c.openAlerts.joined(separator: ", ")))</td>"
                b += "</tr>\n"
            }
            b += "</tbody></table>\n"
        }
        b += "</section>\n<section id=\"alerts\"><h2>Open alerts</h2>\n"
        b += alertsTable(page.openAlerts, now: page.now, onCabinetPage: false, next: "/", admin: admin) + "</section>\n"
        return document(title: "CoinMech fleet", user: (user, admin), body: b)
    }

    /// `2026-11-29` for a time (UTC).
    static func isoDay(_ time: Double) -> String {
        guard let c = civil(time) else { return "" }
        return "\(c.y)-\(two(c.mo))-\(two(c.d))"
    }

    public static func cabinet(_ page: FleetViews.CabinetPage, user: String, admin: Bool, message: String?) -> String {
        let c = page.line, path = "/cabinet/" + pathSegment(c.cabinet)
        var b = ""
        if let message { b += "<div class=\"notice\" role=\"status\">\(escape(message))</div>\n" }
        b += "<h1>Cabinet \(escape(c.cabinet))</h1>\n"
        b += "<p id=\"state\" class=\"stateline\" data-cabinet=\"\(escape(c.cabinet))\" data-state=\"\(escape(c.state))\""
        b += " data-cash-box=\"\(escape(figures(c.cashBox)))\" data-today=\"\(escape(figures(c.today)))\" data-stored-seq=\"\(c.storedSeq)\">"
        b += "\(stateText(c, now: page.now)) · site \(escape(c.site)) · cash box \(escape(formatMoney(c.cashBox)))"
        b += " · today \(escape(formatMoney(c.today))) · events stored to seq \(c.storedSeq)</p>\n"

        // credited_value is in minor units of the cabinet's currency: shown as money only when
        // everything on the page agrees on a single one.
        var currencies = Set(c.cashBox.map(\.currency) + c.today.map(\.currency) + page.hourly.map(\.money.currency))
        currencies.formUnion(page.collections.map(\.counted.currency))
        currencies.formUnion((page.pendingCollect?.money ?? []).map(\.currency))
        let valueCurrency = currencies.count == 1 ? currencies.first : nil
        b += "<section id=\"counters\"><h2>Counters</h2>\n"
        b += "<table><thead><tr><th>Counter</th><th>Since collection</th><th>Lifetime</th></tr></thead><tbody>\n"
        for k in page.counters {
            let show = { (n: Int64) in
                if k.name == "credited_value", let valueCurrency { return formatMoney(FleetViews.Money(currency: valueCurrency, minor: n)) }
                return String(n)
            }
            b += "<tr data-counter=\"\(escape(k.name))\" data-since=\"\(k.sinceCollection)\" data-lifetime=\"\(k.lifetime)\">"
            b += "<td>\(escape(k.name))</td><td class=\"num\">\(escape(show(k.sinceCollection)))</td><td class=\"num\">\(escape(show(k.lifetime)))</td></tr>\n"
        }
        b += "</tbody></table>\n</section>\n"

        // The customer's credit the cabinet holds, and what moved it, from its stored events.
        b += "<section id=\"customer-credit\"><h2>Customer credit</h2>\n"
        if page.credit.isEmpty {
            b += "<p>No credit event stored yet.</p>\n"
        } else {
            b += "<table><thead><tr><th>Currency</th><th>Balance</th><th>Sales</th><th>Refunds</th><th>Escrow returns</th><th>Expired</th></tr></thead><tbody>\n"
            for k in page.credit {
                let money = { (minor: Int64) in formatMoney(FleetViews.Money(currency: k.currency, minor: minor)) }
                b += "<tr data-credit-currency=\"\(escape(k.currency))\" data-balance=\"\(k.balanceMinor.map(String.init) ?? "")\""
                for (kind, name) in [("credit_spent", "sales"), ("credit_refunded", "refunds"), ("credit_returned", "returns"), ("credit_expired", "expiries")] {
                    let moves = k.moves[kind] ?? (0, 0)
                    b += " data-\(name)=\"\(moves.count)\" data-\(name)-minor=\"\(moves.minor)\""
                }
                b += "><td>\(escape(k.currency))</td><td class=\"num\">\(k.balanceMinor.map { escape(money($0)) } ?? "—")</td>"
                for kind in ["credit_spent", "credit_refunded", "credit_returned", "credit_expired"] {
                    let moves = k.moves[kind] ?? (0, 0)
                    b += "<td class=\"num\">\(moves.count) · \(escape(money(moves.minor)))</td>"
                }
                b += "</tr>\n"
            }
            b += "</tbody></table>\n"
        }
        b += "</section>\n"

        b += "<section id=\"credit\"><h2>Credit per hour</h2>\n\(CreditPlot.svg(page.hourly, now: page.now))\n</section>\n"

        b += "<section id=\"collections\"><h2>Collections</h2>\n"
        if page.collections.isEmpty {
            b += "<p>No collection recorded yet.</p>\n"
        } else {
            b += "<table><thead><tr><th>Time</th><th>By</th><th>Counted</th><th>Ledger</th><th>Difference</th></tr></thead><tbody>\n"
            for k in page.collections {
                let diff = formatMoney(FleetViews.Money(currency: k.counted.currency, minor: k.difference))
                b += "<tr\(k.difference != 0 ? " class=\"diff\"" : "") data-collection=\"\(k.id)\" data-counted=\"\(escape(figures([k.counted])))\""
                b += " data-ledger=\"\(escape(figures([k.ledger])))\" data-difference=\"\(k.difference)\">"
                b += "<td>\(time(k.time))</td><td>\(escape(k.by))</td><td class=\"num\">\(escape(formatMoney(k.counted)))</td>"
                b += "<td class=\"num\">\(escape(formatMoney(k.ledger)))\(k.ledgerSeq.map { " (seq \($0))" } ?? "")</td>"
                b += "<td class=\"num\">\(k.difference > 0 ? "+" : "")\(escape(diff))</td></tr>\n"
            }
            b += "</tbody></table>\n"
        }
        // What the cabinet itself recorded is the figure a count is checked against; the cash box
        // (credit since its last `collect`) only when it has recorded none since.
        let against: String, currency: String
        if let pending = page.pendingCollect {
            against = "Compared with the cabinet's collection at seq \(pending.seq): \(formatMoney(pending.money))"
            currency = pending.money.first?.currency ?? c.cashBox.first?.currency ?? "USD"
        } else {
            against = "No collection recorded by the cabinet since the last one: compared with the cash box now (\(formatMoney(c.cashBox)))"
            currency = c.cashBox.first?.currency ?? "USD"
        }
        b += """
            <form method="post" action="\(path)/collections">
            <p><label>Counted <input name="amount" inputmode="decimal" placeholder="12.35" required></label>
            <label>Currency <input name="currency" value="\(escape(currency))" size="4" required></label>
            <button type="submit">Record collection</button></p>
            <p class="hint">\(escape(against)).</p>
            </form>
            </section>

            """

        // The EVA-DTS audit a vending-management system reads (docs/FLEET.md, "DEX export"):
        // the last 7 days (UTC) at a click, or any period.
        let day = (page.now / 86400).rounded(.down) * 86400
        let weekAgo = isoDay(day - 6 * 86400), tomorrow = isoDay(day + 86400)
        b += """
            <section id="dex"><h2>Audit export (EVA-DTS)</h2>
            <p><a id="dex-week" href="\(path)/dex?from=\(weekAgo)&amp;to=\(tomorrow)" download>DEX file of the last 7 days</a> (\(weekAgo) to \(isoDay(day)), UTC)</p>
            <form method="get" action="\(path)/dex">
            <p><label>From <input type="date" name="from" value="\(weekAgo)" required></label>
            <label>To (not included) <input type="date" name="to" value="\(tomorrow)" required></label>
            <button type="submit">Download DEX file</button></p>
            </form>
            </section>

            """

        b += "<section id=\"cabinet-alerts\"><h2>Alerts</h2>\n"
        b += alertsTable(page.alerts, now: page.now, onCabinetPage: true, next: path, admin: admin) + "</section>\n"

        b += "<section id=\"events\"><h2>Recent events</h2>\n"
        if page.recentEvents.isEmpty {
            b += "<p>No event stored yet.</p>\n"
        } else {
            b += "<table><thead><tr><th>Seq</th><th>Time</th><th>Kind</th><th>Summary</th></tr></thead><tbody>\n"
            for e in page.recentEvents {
                b += "<tr data-seq=\"\(e.seq)\"><td class=\"num\">\(e.seq)</td><td>\(time(e.time))</td><td>\(escape(e.kind))</td><td>\(escape(e.summary))</td></tr>\n"
            }
            b += "</tbody></table>\n"
        }
        b += "</section>\n<section id=\"commands\"><h2>Commands</h2>\n"
        if page.commands.isEmpty {
            b += "<p>No command sent yet.</p>\n"
        } else {
            b += "<table><thead><tr><th>Sent</th><th>Command</th><th>Arguments</th><th>By</th><th>Outcome</th></tr></thead><tbody>\n"
            for k in page.commands {
                let failed = k.outcome.map { $0 != "ok" } ?? false
                b += "<tr data-command=\"\(escape(k.id))\" data-outcome=\"\(escape(k.outcome ?? ""))\"><td>\(time(k.sent))</td><td>\(escape(k.name))</td>"
                b += "<td><code>\(escape(k.args))</code></td><td>\(escape(k.by))</td>"
                b += "<td\(failed ? " class=\"alert\"" : "")>\(escape(k.outcome ?? "no reply yet"))</td></tr>\n"
            }
            b += "</tbody></table>\n"
        }
        if admin {
            b += "<form method=\"post\" action=\"\(path)/commands\">\n<p><label>Command <select name=\"name\">"
            for name in ["inhibit_on", "inhibit_off", "status", "totals"] { b += "<option value=\"\(name)\">\(name)</option>" }
            b += "</select></label> <button type=\"submit\">Send</button></p>\n</form>\n"
        }
        b += "</section>\n"
        return document(title: "CoinMech cabinet \(c.cabinet)", user: (user, admin), body: b)
    }

    public static func notFound(_ what: String) -> String {
        document(title: "Not found", user: nil, body: "<h1>Not found</h1>\n<p>\(escape(what))</p>\n<p><a href=\"/\">Back to the fleet</a></p>\n")
    }

    public static func error(_ message: String) -> String {
        document(title: "Error", user: nil, body: "<h1>Error</h1>\n<p class=\"error\">\(escape(message))</p>\n<p><a href=\"/\">Back to the fleet</a></p>\n")
    }

    // MARK: Pieces

    static func document(title: String, user: (name: String, admin: Bool)?, body: String) -> String {
        var d = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title))</title>
            <link rel="icon" href="data:,">
            <style>
            \(css)</style>
            </head>
            <body>

            """
        if let user {
            d += "<header><a href=\"/\">CoinMech fleet</a><span class=\"user\">\(escape(user.name))\(user.admin ? " (admin)" : "")</span>"
            d += "<form class=\"inline\" method=\"post\" action=\"/logout\"><button type=\"submit\">Log out</button></form></header>\n"
        }
        return d + "<main>\n" + body + "</main>\n</body>\n</html>\n"
    }

    static let css = """
        body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1a1a1a; background: #fafafa; line-height: 1.4; }
        header { display: flex; gap: 1em; align-items: center; padding: .5em 1em; background: #20303f; color: #fff; }
        header a { color: #fff; font-weight: bold; text-decoration: none; }
        header .user { margin-left: auto; }
        main { padding: 1em; max-width: 80em; }
        table { border-collapse: collapse; margin: .5em 0; }
        th, td { border: 1px solid #bbb; padding: .25em .5em; text-align: left; vertical-align: top; }
        th { background: #eee; }
        td.num { text-align: right; font-variant-numeric: tabular-nums; }
        .online { color: #17702a; font-weight: bold; }
        .offline { color: #b00020; font-weight: bold; }
        .alert, .error { color: #b00020; }
        tr.diff td { background: #fde8e8; color: #b00020; }
        .notice { border: 1px solid #3a6ea5; background: #e8f0fa; padding: .5em 1em; margin: .5em 0; }
        form.inline { display: inline; margin: 0; }
        .hint { color: #555; }

        """

    /// Alerts only an admin may acknowledge: `ledger_conflict` releases the cabinet's ack hold
    /// (F5), `events_missing` gives seqs up for good (F8).
    public static let adminAcknowledged: Set<String> = ["ledger_conflict", "events_missing"]

    static func alertsTable(_ alerts: [FleetViews.Alert], now: Double, onCabinetPage: Bool, next: String, admin: Bool) -> String {
        if alerts.isEmpty { return "<p>No alerts.</p>\n" }
        var b = "<table><thead><tr>\(onCabinetPage ? "" : "<th>Cabinet</th>")<th>Kind</th><th>Detail</th><th>Opened</th>"
        b += "\(onCabinetPage ? "<th>Closed</th>" : "")<th>Acknowledged</th></tr></thead><tbody>\n"
        for a in alerts {
            b += "<tr\(a.closed == nil ? " class=\"alert\"" : "") data-alert=\"\(a.id)\" data-kind=\"\(escape(a.kind))\" data-open=\"\(a.closed == nil)\">"
            if !onCabinetPage { b += "<td>\(cabinetLink(a.cabinet))</td>" }
            b += "<td>\(escape(a.kind))</td><td>\(escape(a.detail))</td><td>\(ago(a.opened, now: now)) ago</td>"
            if onCabinetPage { b += "<td>\(a.closed.map { time($0) } ?? "open")</td>" }
            if let by = a.ackedBy {
                b += "<td>acked by \(escape(by))</td>"
            } else if !admin && Self.adminAcknowledged.contains(a.kind) {
                b += "<td>an admin's to acknowledge</td>"
            } else {
                // `next` lets the server send the operator back to the page the form was on.
                b += "<td><form class=\"inline\" method=\"post\" action=\"/alerts/\(a.id)/ack\"><input type=\"hidden\" name=\"next\" value=\"\(escape(next))\">"
                b += "<button type=\"submit\">Acknowledge</button></form></td>"
            }
            b += "</tr>\n"
        }
        return b + "</tbody></table>\n"
    }

    static func stateText(_ c: FleetViews.CabinetLine, now: Double) -> String {
        var s = "<span class=\"\(c.state == "online" ? "online" : c.state == "offline" ? "offline" : "unknown")\">\(escape(c.state))"
        if let reason = c.stateReason, !reason.isEmpty { s += " (\(escape(reason)))" }
        s += "</span>"
        if let since = c.stateSince { s += " for \(ago(since, now: now))" }
        return s
    }

    static func cabinetLink(_ cabinet: String) -> String {
        "<a href=\"/cabinet/\(pathSegment(cabinet))\">\(escape(cabinet))</a>"
    }

    /// A relative age (`3 min`) carrying the absolute UTC time in its `title`.
    static func ago(_ t: Double, now: Double) -> String {
        let d = now - t
        let s = d.isFinite && d > 0 ? Int64(min(d, 1e15)) : 0
        let text = s < 60 ? "\(s) s" : s < 3600 ? "\(s / 60) min" : s < 86400 ? "\(s / 3600) h" : "\(s / 86400) d"
        return "<time datetime=\"\(isoUTC(t))\" title=\"\(utc(t))\">\(text)</time>"
    }

    static func time(_ t: Double) -> String { "<time datetime=\"\(isoUTC(t))\">\(utc(t))</time>" }

    // MARK: Formatting

    /// `12.35 USD`, `-0.05 USD`: minor units, always two decimals (zero-decimal currencies are not
    /// special-cased).
    public static func formatMoney(_ m: FleetViews.Money) -> String {
        let magnitude = m.minor.magnitude  // no overflow at Int64.min
        let cents = magnitude % 100
        return "\(m.minor < 0 ? "-" : "")\(magnitude / 100).\(cents < 10 ? "0" : "")\(cents) \(m.currency)"
    }

    /// Several currencies joined with `, `; none is `—`.
    public static func formatMoney(_ list: [FleetViews.Money]) -> String {
        list.isEmpty ? "—" : list.map(formatMoney).joined(separator: ", ")
    }

    /// The machine-readable form for `data-` attributes: `EUR:200;USD:1235`, sorted by currency.
    public static func figures(_ list: [FleetViews.Money]) -> String {
        list.sorted { ($0.currency, $0.minor) < ($1.currency, $1.minor) }.map { "\($0.currency):\($0.minor)" }.joined(separator: ";")
    }

    /// The one escape every interpolated text goes through, for element content and attributes alike.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for ch in text.unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(ch)
            }
        }
        return out
    }

    /// A URL path segment: letters, digits, `-` and `_` as they are, every other byte (`.` and
    /// `/` included, so no segment can climb the path) as `%XX`.
    public static func pathSegment(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".unicodeScalars)
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%"
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 15)])
            }
        }
        return out
    }

    /// `2026-11-26 17:40:05 UTC`, seconds rounded down.
    public static func utc(_ t: Double) -> String {
        guard let c = civil(t) else { return "—" }
        return "\(c.y)-\(two(c.mo))-\(two(c.d)) \(two(c.h)):\(two(c.mi)):\(two(c.s)) UTC"
    }

    static func isoUTC(_ t: Double) -> String {
        guard let c = civil(t) else { return "" }
        return "\(c.y)-\(two(c.mo))-\(two(c.d))T\(two(c.h)):\(two(c.mi)):\(two(c.s))Z"
    }

    static func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }

    /// Seconds since 1970 to the UTC calendar, by Howard Hinnant's civil-from-days (no Foundation,
    /// no time zone database). Nil for times no page should show.
    static func civil(_ t: Double) -> (y: Int64, mo: Int64, d: Int64, h: Int64, mi: Int64, s: Int64)? {
        guard t.isFinite, abs(t) < 1e12 else { return nil }
        let secs = Int64(t.rounded(.down))
        let days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400
        let rest = secs - days * 86400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d, rest / 3600, rest % 3600 / 60, rest % 60)
    }
}
