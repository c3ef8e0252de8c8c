import CoinMechProtocol
import Foundation

/// Teach mode for people: what a command did, and `teach status` as a table and a histogram
/// per axis of the sample coins, with the proposed window and its neighbours' windows marked.
enum TeachFormat {
    static func started(_ r: TeachStartReply) -> String {
        """
            teaching \(r.currency) \(r.code) on link '\(r.link)' (event #\(r.seq)): insert \(r.coins) sample coins; every coin is returned
              coinctl teach status   the figures so far, with a histogram per axis
              coinctl teach commit   writes the window to \(r.file) and reloads the chain
              coinctl teach abort    ends teach mode; nothing is written
            """
    }

    static func committed(_ r: TeachCommitReply) -> String {
        let units = ["diameter": "mm", "weight": "g", "thickness": "mm"]
        let axes = TeachCommitReply.axisNames.compactMap { axis in r.axes[axis].map { "\(axis) \($0) \(units[axis] ?? "")" } }.joined(separator: ", ")
        var lines = [
            "taught \(r.currency) \(r.code) from \(r.samples) coins (event #\(r.seq)): \(axes)" + (r.leftOut > 0 ? "; \(r.leftOut) left out" : ""),
            "written to \(r.file) (sha256 \(r.sha256.prefix(12))…)",
        ]
        if let generation = r.reload?.generation {
            lines.append("chain reloaded: generation \(generation); coin-table uses the taught window")
        }
        return lines.joined(separator: "\n")
    }

    static func aborted(_ r: TeachAbortReply) -> String {
        "teach mode ended (event #\(r.seq)): \(r.samples) sample coins of \(r.currency) \(r.code) set aside, nothing written; coins are decided again"
    }

    /// The whole of `teach status`.
    static func status(_ s: JSON, width: Int = 64) -> String {
        guard s["teaching"]?.bool == true else { return "not teaching (coinctl teach start CURRENCY CODE)" }
        let name = "\(s["currency"]?.string ?? "?") \(s["code"]?.string ?? "?")"
        let collected = s["collected"]?.int ?? 0, wanted = s["coins"]?.int ?? 0, skipped = s["not_collected"]?.int ?? 0
        let window = s["window_sigma"]?.double ?? 4
        var lines = [
            "teaching \(name) on link '\(s["link"]?.string ?? "?")' for \(Int(s["started_s_ago"]?.double ?? 0)) s (started by \(s["by"]?.string ?? "?")): "
                + "\(collected) of \(wanted) sample coins" + (skipped > 0 ? ", \(skipped) readings not kept" : ""),
            "a commit writes \(s["file"]?.string ?? "?")" + (s["committable"]?.bool == true ? "" : " (not yet: see below)"),
        ]
        let axes = ["diameter", "weight", "thickness"].compactMap { name in s["axes"]?[name].map { (name, $0) } }
        if axes.isEmpty {
            lines.append("")
            lines.append("no figures yet: insert sample coins of \(name)")
        } else {
            lines.append("")
            func p(_ text: String, _ width: Int, right: Bool = false) -> String { Format.pad(text, width, right: right) }
            lines.append(p("axis", 10) + p("count", 6, right: true) + p("mean", 11, right: true) + p("σ", 8, right: true)
                + p("mint", 9, right: true) + p("bias", 9, right: true) + "   window (±\(plain(window))σ, as coin-table will match)")
            for (axis, a) in axes {
                let unit = a["unit"]?.string ?? ""
                let bias = a["bias_percent"]?.double.map { String(format: "%+.2f %%", $0) } ?? "–"
                lines.append(p(axis, 10) + p("\(a["count"]?.int ?? 0)", 6, right: true) + p(fixed(a["mean"]) + " " + unit, 11, right: true)
                    + p(fixed(a["sigma"]), 8, right: true) + p(a["mint"].map(fixed) ?? "–", 9, right: true) + p(bias, 9, right: true)
                    + "   \(fixed(a["window"]?["low"])) – \(fixed(a["window"]?["high"])) \(unit)")
            }
        }
        let neighbours = s["neighbours"]?.array ?? []
        if !neighbours.isEmpty {
            lines.append("")
            lines.append("neighbours: separation on diameter and weight, in the taught σ and in theirs")
            for n in neighbours {
                let flag = n["overlap"]?.bool == true ? "  OVERLAP" : ""
                lines.append("  " + Format.pad(n["name"]?.string ?? "?", 12) + Format.pad(n["origin"]?.string ?? "?", 9)
                    + Format.pad(String(format: "%.1fσ", n["separation_sigma"]?.double ?? 0), 8, right: true)
                    + Format.pad(String(format: "%.1fσ", n["their_sigma"]?.double ?? 0), 8, right: true) + flag)
            }
        }
        for (axis, a) in axes {
            lines.append("")
            lines += histogram(axis: axis, unit: a["unit"]?.string ?? "", values: samples(s, axis), window: a["window"], own: s["code"]?.string ?? "taught",
                               neighbours: neighbours, width: width)
        }
        for (title, key) in [("warnings", "warnings"), ("cannot commit yet", "problems")] {
            let items = (s[key]?.array ?? []).compactMap(\.string)
            guard !items.isEmpty else { continue }
            lines.append("")
            lines.append("\(title):")
            lines += items.map { "  - \($0)" }
        }
        return lines.joined(separator: "\n")
    }

    /// One axis: counts of the samples as bars (eighths of a row), an axis line with three
    /// figures, then the proposed window and each neighbour's window that reaches the range.
    static func histogram(axis: String, unit: String, values: [Double], window: JSON?, own: String, neighbours: [JSON], width: Int) -> [String] {
        guard let low = window?["low"]?.double, let high = window?["high"]?.double, !values.isEmpty else { return [] }
        var from = min(values.min()!, low), to = max(values.max()!, high)
        let margin = (to - from) * 0.15
        from -= margin
        to += margin
        func column(_ x: Double) -> Int { Int(((x - from) / (to - from) * Double(width)).rounded(.down)) }
        // About two bins per √n samples (a few dozen coins make a dozen bins), each several columns wide.
        let bins = min(width, max(8, Int((2 * Double(values.count).squareRoot()).rounded())))
        var binCounts = [Int](repeating: 0, count: bins)
        for value in values { binCounts[min(bins - 1, max(0, column(value) * bins / width))] += 1 }
        let counts = (0..<width).map { binCounts[$0 * bins / width] }
        let rows = 5, top = counts.max()!
        let blocks = Array(" ▁▂▃▄▅▆▇█")
        let binWidth = (to - from) / Double(bins)
        var lines = ["\(axis) (\(unit)): \(values.count) samples in bins of \(String(format: "%.3f", binWidth)) \(unit), the tallest \(top)"]
        for row in (0..<rows).reversed() {
            let line = counts.map { count -> Character in
                let eighths = count * rows * 8 / top - row * 8
                return count == 0 ? " " : blocks[max(row == 0 ? 1 : 0, min(8, eighths))]
            }
            lines.append(" " + String(line).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression))
        }
        lines.append(" " + String(repeating: "─", count: width))
        let labels = [from, (from + to) / 2, to].map { String(format: "%.3f", $0) }
        let gap = max(1, width - labels.map(\.count).reduce(0, +))
        lines.append(" " + labels[0] + String(repeating: " ", count: gap / 2) + labels[1] + String(repeating: " ", count: gap - gap / 2) + labels[2])
        lines.append(bar(low, high, label: "\(own) (taught)", fill: "=", column: column, width: width))
        for n in neighbours {
            guard let w = n["window"]?[axis], let nLow = w["low"]?.double, let nHigh = w["high"]?.double, nHigh >= from, nLow <= to else { continue }
            lines.append(bar(nLow, nHigh, label: "\(n["name"]?.string ?? "?") (\(n["origin"]?.string ?? "?"))", fill: "-", column: column, width: width))
        }
        return lines
    }

    /// `[====label====]` from `low` to `high`; `<` or `>` where it runs off the range.
    static func bar(_ low: Double, _ high: Double, label: String, fill: Character, column: (Double) -> Int, width: Int) -> String {
        let start = column(low), end = column(high)
        var cells = [Character](repeating: " ", count: width)
        let first = max(0, start), last = min(width - 1, end)
        guard first <= last else { return "" }
        for index in first...last { cells[index] = fill }
        cells[first] = start < 0 ? "<" : "["
        cells[last] = end >= width ? ">" : "]"
        // The label inside the bar, else after it, else before it, else at the end of the line.
        let text = Array(" \(label) ")
        if text.count <= last - first - 1 {
            place(text, at: first + 1 + (last - first - 1 - text.count) / 2, in: &cells)
        } else if last + 1 + text.count <= width {
            place(text, at: last + 1, in: &cells)
        } else if text.count <= first {
            place(text, at: first - text.count, in: &cells)
        } else {
            cells += text
        }
        return " " + String(cells).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
    }

    private static func place(_ text: [Character], at start: Int, in cells: inout [Character]) {
        for (offset, character) in text.enumerated() { cells[start + offset] = character }
    }

    /// One axis of every sample (diameter, weight, thickness are the columns of `samples`).
    static func samples(_ s: JSON, _ axis: String) -> [Double] {
        let column = ["diameter": 0, "weight": 1, "thickness": 2][axis] ?? 0
        return (s["samples"]?.array ?? []).compactMap { $0.array.flatMap { $0.count > column ? $0[column].double : nil } }
    }

    static func fixed(_ value: JSON?) -> String { value?.double.map { String(format: "%.3f", $0) } ?? "–" }

    static func plain(_ value: Double) -> String { value == value.rounded() ? "\(Int(value))" : String(format: "%.1f", value) }
}
