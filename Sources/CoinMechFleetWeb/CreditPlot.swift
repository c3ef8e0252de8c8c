import CoinMechFleet

/// Credit per hour over the seven days ending at `now`, as an inline SVG bar chart: drawn on the
/// server so the dashboard needs no JavaScript. One currency, the one with the most credit in the
/// window (ties go to the first code in alphabetical order, so the output is deterministic).
public enum CreditPlot {
    static let hours = 168
    static let emptyText = "no credit in the last 7 days"

    public static func svg(_ hourly: [FleetViews.HourlyCredit], now: Double, width: Int = 720, height: Int = 200) -> String {
        let w = max(width, 240), h = max(height, 100)
        // Buckets start on the hour (UTC); the last one is the hour `now` is in.
        let last = now.isFinite ? (now / 3600).rounded(.down) * 3600 : 0
        let first = last - Double(hours - 1) * 3600
        var totals: [String: Int64] = [:]
        var buckets: [String: [Int64]] = [:]
        for credit in hourly where credit.money.minor > 0 && credit.hour.isFinite {
            let slot = ((credit.hour - first) / 3600).rounded(.down)
            guard slot >= 0, slot < Double(hours) else { continue }
            let currency = credit.money.currency
            totals[currency, default: 0] &+= credit.money.minor
            buckets[currency, default: Array(repeating: 0, count: hours)][Int(slot)] &+= credit.money.minor
        }
        let ranked = totals.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        let open = "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"\(w)\" height=\"\(h)\" viewBox=\"0 0 \(w) \(h)\" class=\"credit-plot\">"
        guard let currency = ranked.first?.key, let values = buckets[currency], let top = values.max(), top > 0 else {
            return open + "<title>Credit per hour: \(emptyText)</title>"
                + "<rect x=\"0.5\" y=\"0.5\" width=\"\(w - 1)\" height=\"\(h - 1)\" fill=\"none\" stroke=\"#bbb\"/>"
                + "<text x=\"\(w / 2)\" y=\"\(h / 2)\" text-anchor=\"middle\" font-size=\"14\" fill=\"#555\">\(emptyText)</text></svg>"
        }

        let left = 8.0, right = 8.0, topMargin = 32.0, bottom = 20.0
        let plotWidth = Double(w) - left - right, plotHeight = Double(h) - topMargin - bottom
        let slotWidth = plotWidth / Double(hours), base = topMargin + plotHeight
        let others = ranked.dropFirst().map(\.key)
        let currencyText = FleetPages.escape(currency)
        var caption = "Credit per hour in \(currencyText), the 7 days to \(FleetPages.utc(now))"
        if !others.isEmpty { caption += "; also \(FleetPages.escape(others.joined(separator: ", "))), not drawn" }
        let maxLabel = FleetPages.escape(FleetPages.formatMoney(FleetViews.Money(currency: currency, minor: top)))

        var s = open + "<title>\(caption)</title>\n"
        s += "<text x=\"\(n(left))\" y=\"14\" font-size=\"12\" fill=\"#1a1a1a\">\(caption)</text>\n"
        // The y axis, and the maximum as a dashed line labelled just above it.
        s += "<line x1=\"\(n(left))\" y1=\"\(n(topMargin))\" x2=\"\(n(left))\" y2=\"\(n(base))\" stroke=\"#555\"/>\n"
        s += "<line x1=\"\(n(left))\" y1=\"\(n(topMargin))\" x2=\"\(n(left + plotWidth))\" y2=\"\(n(topMargin))\" stroke=\"#bbb\" stroke-dasharray=\"4 3\"/>\n"
        s += "<text x=\"\(n(left + 4))\" y=\"\(n(topMargin - 3))\" font-size=\"11\" fill=\"#555\" class=\"max\">max \(maxLabel)</text>\n"
        for (i, v) in values.enumerated() where v > 0 {
            // At least one pixel high, so a single coin beside a big hour still shows.
            let barHeight = max(plotHeight * Double(v) / Double(top), 1)
            let hour = first + Double(i) * 3600
            let label = FleetPages.escape(FleetPages.formatMoney(FleetViews.Money(currency: currency, minor: v)))
            s += "<rect class=\"bar\" x=\"\(n(left + Double(i) * slotWidth))\" y=\"\(n(base - barHeight))\" width=\"\(n(slotWidth * 0.8))\""
            s += " height=\"\(n(barHeight))\" fill=\"#3a6ea5\" data-hour=\"\(Int64(hour))\" data-minor=\"\(v)\">"
            s += "<title>\(FleetPages.utc(hour)): \(label)</title></rect>\n"
        }
        // The x axis, with a tick at each UTC midnight inside the window and the day it begins.
        s += "<line x1=\"\(n(left))\" y1=\"\(n(base))\" x2=\"\(n(left + plotWidth))\" y2=\"\(n(base))\" stroke=\"#555\"/>\n"
        var midnight = (first / 86400).rounded(.up) * 86400
        while midnight <= last {
            let x = left + (midnight - first) / 3600 * slotWidth
            let day = FleetPages.utc(midnight)  // "2026-11-26 00:00:00 UTC": MM-DD is characters 5..<10
            let mmdd = day.dropFirst(5).prefix(5)
            s += "<line x1=\"\(n(x))\" y1=\"\(n(base))\" x2=\"\(n(x))\" y2=\"\(n(base + 4))\" stroke=\"#555\"/>"
            s += "<text x=\"\(n(x + 2))\" y=\"\(n(base + 15))\" font-size=\"11\" fill=\"#555\">\(mmdd)</text>\n"
            midnight += 86400
        }
        return s + "</svg>"
    }

    /// A coordinate with one decimal, spelled without Foundation so the output never depends on
    /// a locale.
    static func n(_ x: Double) -> String {
        let tenths = Int64((x * 10).rounded())
        let magnitude = tenths.magnitude
        return "\(tenths < 0 ? "-" : "")\(magnitude / 10).\(magnitude % 10)"
    }
}
