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
    static func status(_ reply: TeachStatusReply, width: Int = 64) -> String {
        guard let s = reply.session else { return "not teaching (coinctl teach start CURRENCY CODE)" }
        let name = "\(s.currency) \(s.code)"
        var lines = [
            "teaching \(name) on link '\(s.link)' for \(Int(s.startedSecondsAgo)) s (started by \(s.by)): "
                + "\(s.collected) of \(s.coins) sample coins" + (s.notCollected > 0 ? ", \(s.notCollected) readings not kept" : ""),
            "a commit writes \(s.file)" + (s.committable ? "" : " (not yet: see below)"),
        ]
        let axes = TeachStatusReply.axisNames.compactMap { name in s.axes[name].map { (name, $0) } }
        if axes.isEmpty {
            lines.append("")
            lines.append("no figures yet: insert sample coins of \(name)")
        } else {
            lines.append("")
            func p(_ text: String, _ width: Int, right: Bool = false) -> String { Format.pad(text, width, right: right) }
            lines.append(p("axis", 10) + p("count", 6, right: true) + p("mean", 11, right: true) + p("σ", 8, right: true)
                + p("mint", 9, right: true) + p("bias", 9, right: true) + "   window (±\(plain(s.windowSigma))σ, as coin-table will match)")
            for (axis, a) in axes {
                let bias = a.biasPercent.map { String(format: "%+.2f %%", $0) } ?? "–"
                lines.append(p(axis, 10) + p("\(a.count)", 6, right: true) + p(fixed(a.mean) + " " + a.unit, 11, right: true)
                    + p(fixed(a.sigma), 8, right: true) + p(a.mint.map(fixed) ?? "–", 9, right: true) + p(bias, 9, right: true)
                    + "   \(fixed(a.window.low)) – \(fixed(a.window.high)) \(a.unit)")
            }
        }
        if !s.neighbours.isEmpty {
            lines.append("")
            lines.append("neighbours: separation on diameter and weight, in the taught σ and in theirs")
            for n in s.neighbours {
                lines.append("  " + Format.pad(n.name, 12) + Format.pad(n.origin, 9)
                    + Format.pad(String(format: "%.1fσ", n.separationSigma), 8, right: true)
                    + Format.pad(String(format: "%.1fσ", n.theirSigma), 8, right: true) + (n.overlap ? "  OVERLAP" : ""))
            }
        }
        for (axis, a) in axes {
            lines.append("")
            lines += histogram(axis: axis, unit: a.unit, values: samples(s, axis), window: a.window, own: s.code, neighbours: s.neighbours, width: width)
        }
        for (title, items) in [("warnings", s.warnings), ("cannot commit yet", s.problems)] where !items.isEmpty {
            lines.append("")
            lines.append("\(title):")
            lines += items.map { "  - \($0)" }
        }
        return lines.joined(separator: "\n")
    }

    /// One axis: counts of the samples as bars (eighths of a row), an axis line with three
    /// figures, then the proposed window and each neighbour's window that reaches the range.
    static func histogram(axis: String, unit: String, values: [Double], window: TeachStatusReply.Window, own: String,
                          neighbours: [TeachStatusReply.Neighbour], width: Int) -> [String] {
        let low = window.low, high = window.high
        guard !values.isEmpty else { return [] }
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
            guard let w = n.spreads[axis]?.window, w.high >= from, w.low <= to else { continue }
            lines.append(bar(w.low, w.high, label: "\(n.name) (\(n.origin))", fill: "-", column: column, width: width))
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

    /// One axis of every sample.
    static func samples(_ s: TeachStatusReply.Session, _ axis: String) -> [Double] {
        switch axis {
        case "diameter": s.samples.map(\.diameter)
        case "weight": s.samples.map(\.weight)
        default: s.samples.compactMap(\.thickness)
        }
    }

    static func fixed(_ value: Double) -> String { String(format: "%.3f", value) }

    static func plain(_ value: Double) -> String { value == value.rounded() ? "\(Int(value))" : String(format: "%.1f", value) }
}
