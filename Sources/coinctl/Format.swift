import CoinMechModel
import CoinMechProtocol
import Foundation

/// Tables and lines for people.
enum Format {
    static func money(_ minor: Int64, _ currency: String) -> String {
        let sign = minor < 0 ? "-" : ""
        let magnitude = abs(minor)
        let cents = magnitude % 100
        return "\(sign)\(magnitude / 100).\(cents < 10 ? "0" : "")\(cents)"
    }

    static func values(_ values: [String: Int64]) -> String {
        values.isEmpty ? "nothing" : values.keys.sorted().map { "\($0) \(money(values[$0]!, $0))" }.joined(separator: ", ")
    }

    static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return right ? padding + text : text + padding
    }

    static func status(_ s: StatusReply) -> String {
        let c = s.counters
        let uptime = Int(s.uptimeSeconds)
        var inhibited = s.inhibited ? "yes (operator)" : "no"
        if let reason = s.pluginInhibit { inhibited = "YES: \(reason)" }
        let problems = s.linkProblems.map { problem in
            "\n            link        \(problem.link) \(problem.state.uppercased()) (\(problem.cause)): \(problem.reason)"
        }.joined()
        // Links that accepted coins this cabinet does not take: loud, they wanted money.
        let lies = s.pluginLies.map { lie in
            "\n            LIES        \(lie.link) accepted \(lie.count) coins this cabinet does not take (returned); last: \(lie.last)"
        }.joined()
        return """
            source      \(s.source.kind) \(s.source.device) (\(s.source.connected ? "connected" : "disconnected"))
            inhibited   \(inhibited)\(problems)\(lies)
            ledger      \(s.ledgerOK ? "ok" : "failing")
            chain       generation \(s.chainGeneration), \(s.links) links
            readings    \(c.readings) (accepted \(c.accepted), returned \(c.rejected), duplicates \(c.duplicates), protocol errors \(c.protocolErrors), too late to accept \(c.deadlinePassed), late answers \(c.lateAnswers))
            credit      \(c.credited) coins stored and credited, \(s.pending) pending, \(c.returnedAfterAccept) returned after the accept, \(c.unconfirmed) unconfirmed (not credit: check the cash box)
            mech        \(c.connects) connections (\(c.reconnects) after losing it), \(c.queries) queries about pending coins
            uptime      \(uptime / 3600)h \(uptime / 60 % 60)m \(uptime % 60)s
            last seq    \(s.lastSeq)
            """ + (s.acceptor.map(acceptor) ?? "")
    }

    /// A coin acceptor's or changer's lines of `status`: who, whether it takes coins, its
    /// events; loud about lost events, lost replies and faults. A changer's are `changer`'s.
    static func acceptor(_ a: StatusReply.Acceptor) -> String {
        if let changer = a.device.changer { return Self.changer(a, changer) }
        let acceptor = a.device.acceptor ?? DeviceStatus.Acceptor()
        let who = acceptor.identified ? a.device.identity.map { "\($0.manufacturer) \($0.product) serial \($0.serialNumber.isEmpty ? "?" : $0.serialNumber)" } ?? "?"
            : "not identified yet"
        let state = !a.device.responding ? "NOT RESPONDING"
            : a.device.accepting == true ? "accepting, positions \(acceptor.enabledPositions ?? "?")" : "master inhibit on"
        let coins = acceptor.coins.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let c = a.counts
        var lines = [
            "acceptor    \(who), \(state)",
            "            coins \(coins.isEmpty ? "-" : coins); epoch \(acceptor.epoch ?? 0) event \(acceptor.eventNumber ?? 0) (counter \(acceptor.counter ?? 0))",
            "            credited \(c.credited), not credited \(c.uncredited), errors \(c.errorEvents), backlog \(c.backlog), restarts \(c.restarts), lost \(c.lostEvents); \(acceptor.polls) polls, \(acceptor.timeouts) timeouts",
        ]
        if let alarm = a.alarm { lines.append("            ALARM: \(alarm)") }
        if let fault = acceptor.fault { lines.append("            FAULT: \(fault) (the acceptor inhibits itself)") }
        if let failure = a.ledgerFailure { lines.append("            LEDGER: \(failure) (held inhibited)") }
        return "\n" + lines.joined(separator: "\n")
    }

    /// A changer's lines of `status`: who, which coins it takes, its tubes, its coins; loud
    /// about lost replies.
    static func changer(_ a: StatusReply.Acceptor, _ changer: DeviceStatus.Changer) -> String {
        let who = a.device.identity.map { "\($0.manufacturer) \($0.product) serial \($0.serialNumber)" } ?? "level \(changer.level.map(String.init) ?? "?")"
        let types = changer.acceptingTypes ?? 0
        let taking = changer.coins.keys.sorted().filter { types & (1 << $0) != 0 }.compactMap { changer.coins[$0] }
        let state = !a.device.responding ? "NOT RESPONDING"
            : changer.acceptingTypes == nil ? "not set up yet"
            : taking.isEmpty ? "taking no coins (COIN TYPE 0)" : "taking \(taking.joined(separator: " "))"
        var lines = [
            "changer     \(who), \(state)",
            "            tubes \(tubes(changer).map { "\($0.id)=\($0.count)" }.joined(separator: " "))",
            "            credited \(a.counts.credited), not credited \(a.counts.uncredited), replies lost \(a.counts.lostReplies); last coin \(changer.lastCoin)",
        ]
        if let alarm = a.alarm { lines.append("            ALARM: \(alarm)") }
        if a.device.heldForLedger { lines.append("            LEDGER: the changer's coins cannot be recorded (held at COIN TYPE 0)") }
        if changer.heldForPayout { lines.append("            PAYOUT: held at COIN TYPE 0 while a payout is paid or settled") }
        return "\n" + lines.joined(separator: "\n")
    }

    /// A changer's tubes, by coin type.
    static func tubes(_ changer: DeviceStatus.Changer) -> [(id: String, count: Int)] {
        changer.coins.sorted { $0.key < $1.key }.map { type, id in (id, changer.tubes.indices.contains(type) ? changer.tubes[type] : 0) }
    }

    /// `coinctl tubes`: the change tubes of a changer, one line per coin.
    static func tubesTable(_ s: StatusReply) -> String {
        guard let changer = s.acceptor?.device.changer else {
            return "this mech has no change tubes (a coin changer has; source.kind is \(s.source.kind))"
        }
        return (["\(pad("coin", 10))\(pad("count", 7, right: true))"] + tubes(changer).map { "\(pad($0.id, 10))\(pad("\($0.count)", 7, right: true))" })
            .joined(separator: "\n")
    }

    /// `coinctl hoppers`: unit, address, coin, level by the ledger, and the hopper's own word.
    static func hoppersTable(_ s: StatusReply) -> String {
        guard let acceptor = s.acceptor, let hoppers = acceptor.device.hoppers else {
            return "this mech has no payout hoppers (a ccTalk source lists them under hoppers; source.kind is \(s.source.kind))"
        }
        let header = "\(pad("unit", 5))\(pad("address", 9))\(pad("coin", 8))\(pad("level", 7, right: true))  state"
        let rows = hoppers.units.map { h in
            let state = !h.responding ? "not responding"
                : h.reportedCoin.map { "it reports coin \($0), not the configured \(h.coinID): it pays nothing until the configuration or the hopper is put right" } ?? h.flags
            let level = acceptor.levels.indices.contains(h.unit) ? acceptor.levels[h.unit] : 0
            return "\(pad("\(h.unit)", 5))\(pad("\(h.address)", 9))\(pad(h.coinID, 8))\(pad("\(level)", 7, right: true))  \(state)"
        }
        return ([header] + rows).joined(separator: "\n")
    }

    /// `coinctl refill` and `coinctl float`: the level before and after.
    static func inventoryChange(_ r: InventoryReply) -> String {
        let line = "hopper \(r.unit) (\(r.coinID ?? "?")): \(r.levelBefore) → \(r.level) coins"
        guard r.repeated else { return line }
        return line + " (recorded already under request id \(r.requestID), seq \(r.seq): not counted again)"
    }

    /// `coinctl payout-plan`: the coins that would be paid, or why none would.
    static func payoutPlan(_ p: PayoutPlanReply) -> String {
        let amount = "\(p.currency) \(money(p.amountMinor, p.currency))"
        guard p.payable else {
            return "\(amount) cannot be paid exactly from the tubes: the nearest amounts are \(nearest(p.nearestBelow, p.currency, else: "nothing")) below and "
                + "\(nearest(p.nearestAbove, p.currency, else: "nothing (the tubes hold less)")) above"
        }
        return "\(amount) would be paid as \(coins(p.coins))"
    }

    static func payout(_ p: PayoutReply) -> String {
        let amount = "\(p.currency) \(money(p.amountMinor, p.currency))"
        let repeated = p.repeated ? " (asked before: from the ledger, not paid again)" : ""
        switch p.state {
        case .refused:
            return "payout \(p.requestID): \(amount) cannot be paid exactly from the tubes; nothing moved. The nearest amounts are "
                + "\(nearest(p.nearestBelow, p.currency, else: "nothing")) below and \(nearest(p.nearestAbove, p.currency, else: "nothing (the tubes hold less)")) above"
        case .open:
            return "payout \(p.requestID): \(amount) is under way or waits for the changer's count\(repeated)"
        case .done, .partial, .failed:
            var line = "payout \(p.requestID): \(p.state.rawValue), paid \(p.currency) \(money(p.paidMinor ?? 0, p.currency)) of \(amount)"
            if !p.coins.isEmpty { line += " (\(coins(p.coins)))" }
            if let debt = p.debtMinor, debt > 0 { line += "; owed \(p.currency) \(money(debt, p.currency))" }
            if let reason = p.reason { line += ": \(reason)" }
            return line + repeated
        }
    }

    static func credit(_ c: CreditReply) -> String {
        let repeated = c.repeated == true ? " (asked before: from the ledger)" : ""
        let amount = c.amountMinor.map { "\(c.currency) \(money($0, c.currency))" } ?? ""
        let balance = "\(c.currency) \(money(c.balanceMinor, c.currency))"
        switch c.state {
        case .approved:
            if let refund = c.refundedSeq {
                return "sale \(c.requestID): approved \(amount)\(c.item.map { " for \($0)" } ?? "") and put back since (event #\(refund)): vend nothing"
            }
            return "sale \(c.requestID): approved \(amount)\(c.item.map { " for \($0)" } ?? ""); credit left \(balance)\(repeated)"
        case .refused:
            return "sale \(c.requestID): refused, \(amount) is more than the credit of \(balance); nothing recorded"
        case .refunded:
            return "sale \(c.requestID): refunded \(amount); credit now \(balance)\(repeated)"
        case .returned:
            let paid = c.payout.map { payout($0) } ?? "the change is under way"
            let kept = (c.keptMinor ?? 0) > 0 ? "; \(c.currency) \(money(c.keptMinor ?? 0, c.currency)) no coins make stays credit" : ""
            return "return \(c.requestID): \(paid)\(kept)"
        case .kept:
            return "return \(c.requestID): nothing paid back, the credit of \(balance) stays: \(c.reason ?? "")"
        }
    }

    private static func nearest(_ amount: Int64?, _ currency: String, else none: String) -> String {
        amount.map { "\(currency) \(money($0, currency))" } ?? none
    }

    private static func coins(_ coins: [PaidCoins]) -> String {
        coins.map { "\($0.count) × \($0.coinID ?? "?")" }.joined(separator: ", ")
    }

    static func totals(_ t: Totals) -> String {
        var text = rows("current", t.current) + "\n" + rows("lifetime", t.lifetime)
        // Not credit: accepts the mech has not confirmed yet, and those it never can (audit).
        if !t.pending.isEmpty { text += "\n" + rows("pending", t.pending) }
        if !t.unconfirmed.isEmpty {
            text += "\n" + rows("unconfirmed", t.unconfirmed) + "\n(unconfirmed: accepted, but the mech could not say whether they reached the cash box; not credit)"
        }
        return text
    }

    static func rows(_ period: String, _ rows: [TotalsRow]) -> String {
        var lines = ["\(pad("period", 10))\(pad("currency", 10))\(pad("denomination", 14))\(pad("count", 7, right: true))\(pad("value", 11, right: true))\(pad("weight", 12, right: true))"]
        var sums: [String: (Int64, Int64, Double)] = [:]
        for row in rows {
            lines.append("\(pad(period, 10))\(pad(row.currency, 10))\(pad(row.denomination, 14))\(pad("\(row.count)", 7, right: true))\(pad(money(row.valueMinor, row.currency), 11, right: true))\(pad(String(format: "%.2f g", row.weightG), 12, right: true))")
            let sum = sums[row.currency] ?? (0, 0, 0)
            sums[row.currency] = (sum.0 + row.count, sum.1 + row.valueMinor, sum.2 + row.weightG)
        }
        for (currency, sum) in sums.sorted(by: { $0.key < $1.key }) {
            lines.append("\(pad(period, 10))\(pad(currency, 10))\(pad("total", 14))\(pad("\(sum.0)", 7, right: true))\(pad(money(sum.1, currency), 11, right: true))\(pad(String(format: "%.2f g", sum.2), 12, right: true))")
        }
        if rows.isEmpty { lines.append("\(pad(period, 10))(no coins)") }
        return lines.joined(separator: "\n")
    }

    /// The running chain's explanation of a reading: each link's own lines, indented under it.
    static func explanation(_ e: ExplainReply) -> String {
        var figures = ["diameter \(e.diameter) mm"]
        if let weight = e.weight { figures.append("weight \(weight) g") }
        if let thickness = e.thickness { figures.append("thickness \(thickness) mm") }
        var lines = ["reading: \(figures.joined(separator: ", ")) (chain generation \(e.generation); nothing decided or recorded)"]
        for (index, link) in e.links.enumerated() {
            let head = "\(index + 1) \(link.name) (\(link.plugin) \(link.version))"
            if case .notAsked(let why) = link.answer {
                lines.append("\(head): not asked: \(why)")
                continue
            }
            lines.append("\(head): \(link.answer.decision ?? "explained")")
            lines += link.answer.lines.map { "    " + $0 }
        }
        return lines.joined(separator: "\n")
    }

    static func chain(_ c: ChainReply) -> String {
        var lines = ["chain generation \(c.generation)",
                     "\(pad("#", 3))\(pad("link", 14))\(pad("plugin", 14))\(pad("version", 13))\(pad("sha256", 14))\(pad("state", 12))\(pad("calls", 8, right: true))\(pad("accept", 8, right: true))\(pad("reject", 8, right: true))\(pad("pass", 8, right: true))\(pad("mean ns", 9, right: true))"]
        for (index, link) in c.links.enumerated() {
            let stats = link.statistics
            lines.append("\(pad("\(index + 1)", 3))\(pad(link.name, 14))\(pad(link.plugin, 14))\(pad(link.version, 13))\(pad(String(link.sha256.prefix(12)), 14))\(pad(link.state, 12))\(pad("\(stats.calls)", 8, right: true))\(pad("\(stats.accepts)", 8, right: true))\(pad("\(stats.rejects)", 8, right: true))\(pad("\(stats.passes)", 8, right: true))\(pad(String(format: "%.0f", stats.meanNanoseconds), 9, right: true))")
            // How it runs and what it is, from the plugin's own metadata.
            lines.append("   \(link.isolation), budget \(String(format: "%g", link.budgetMilliseconds)) ms, ABI \(link.abi), \(link.readingKinds.joined(separator: ", ")) readings, \(link.license): \(link.summary)")
            if let sandbox = link.sandbox {
                lines.append("   sandbox (\(sandbox.required ? "required" : "warn"), \(sandbox.memoryMiB) MiB): \(sandbox.layers)"
                    + (sandbox.missing.isEmpty ? "" : "; missing: " + sandbox.missing.joined(separator: "; ")))
            }
            if let problem = link.problem {
                lines.append("   \(problem.state.uppercased()) (\(problem.cause)): \(problem.reason)")
            }
        }
        lines.append("\(pad("", 3))\(pad("unrecognized", 14))(host)\(pad("", 37))\(pad("\(c.terminalRejects)", 24, right: true))")
        return lines.joined(separator: "\n")
    }

    static let clock: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        return formatter
    }()

    /// A move of the customer's credit: a sale, a refund, the credit paid back as change, or
    /// expired; each with its request id and the balance it left. None says CREDIT: that word
    /// is a coin's.
    static func creditMove(_ e: LedgerEvent) -> String {
        let detail = e.detailJSON
        let currency = e.currency ?? "?"
        let amount = "\(currency) \(money(e.valueMinor ?? 0, currency))"
        let id = detail?["request_id"]?.string ?? "?"
        let balance = detail?["balance_minor"]?.string.flatMap { Int64($0) }.map { "\(currency) \(money($0, currency))" } ?? "?"
        switch EventKind(rawValue: e.kind) {
        case .creditOpened:
            return "credit account \(detail?["account"]?.string ?? e.source ?? "?") opened in \(currency)"
        case .creditSpent:
            return "SALE \(amount)\(detail?["item"]?.string.map { " for \($0)" } ?? "") (sale \(id)); credit left \(balance)"
        case .creditRefunded:
            return "SALE REFUNDED \(amount) (sale \(id)); credit now \(balance)"
        case .creditReturned:
            return "CHANGE DUE \(amount): the credit paid back (return \(id)); credit left \(balance)"
        default:
            return "EXPIRED \(amount) of credit left standing (\(id)); credit now \(balance)"
        }
    }

    /// A payout's journal: requested with its plan, each step, and how it ended. A settlement
    /// names no currency: `currency` is the one its `payout_requested` named, where known.
    static func payoutStep(_ e: LedgerEvent, currency asked: String? = nil) -> String {
        let detail = e.detailJSON
        func field(_ key: String) -> String { detail?[key]?.string ?? "?" }
        func amount(_ key: String) -> String {
            let currency = e.currency ?? detail?["currency"]?.string ?? asked
            let minor = detail?[key]?.string.flatMap { Int64($0) } ?? 0
            return [currency, money(minor, currency ?? "")].compactMap { $0 }.joined(separator: " ")
        }
        let id = "payout \(field("request_id"))"
        switch EventKind(rawValue: e.kind) {
        case .payoutRequested:
            // `1×USD25 1×USD10` → `1 × USD25, 1 × USD10`
            let plan = field("plan").split(separator: " ").map { $0.replacingOccurrences(of: "×", with: " × ") }.joined(separator: ", ")
            return "PAYOUT \(amount("amount_minor")) asked (\(id)): to pay \(plan)"
        case .payoutDispensing:
            let before = detail?["tube_before"]?.string.map { "; \($0) in it before" } ?? ""
            return "PAYING \(field("count")) × \(field("coin_id")) (\(id), step \(field("step"))\(before))"
        case .payoutDone:
            return "PAID \(amount("paid_minor")) (\(id), done\(detail?["after_restart"]?.string == "true" ? ", settled after a restart" : ""))"
        default:
            let state = e.kind == EventKind.payoutPartial.rawValue ? "PAID SHORT" : "PAYOUT FAILED"
            var line = "\(state): \(amount("paid_minor")) paid, \(amount("debt_minor")) owed to the customer (\(id))"
            if let reason = detail?["reason"]?.string { line += ": \(reason)" }
            return line
        }
    }

    /// One line per event; credited coins show the running totals. `payoutCurrencies`: the
    /// currency of each payout seen asked, by request id (its settlement names none).
    static func event(_ e: LedgerEvent, totals: [String: Int64]? = nil, payoutCurrencies: [String: String] = [:]) -> String {
        let time = clock.string(from: Date(timeIntervalSince1970: e.time))
        let head = "#\(e.seq) \(time)"
        let detail = e.detailJSON
        // A coin acceptor's coin is named by its coin id and position, not measured.
        let named = detail?["coin_id"]?.string.map { "\($0) position \(detail?["position"]?.string ?? "?")" }
        let measured = named ?? [e.diameterMM.map { String(format: "%.2f mm", $0) }, e.weightG.map { String(format: "%.2f g", $0) }]
            .compactMap { $0 }.joined(separator: " ")
        let currency = e.currency ?? "?"
        let coin = "\(pad(currency + " " + (e.denomination ?? "?"), 16)) \(pad(money(e.valueMinor ?? 0, currency), 7, right: true))"
        switch EventKind(rawValue: e.kind) {
        case .decision:
            if e.verdict == "accept" {
                let settled = e.state == nil || e.state == "pending" ? "pending the mech's confirmation" : e.state ?? ""
                return "\(head) ACCEPT \(coin)  [\(measured)] by \(e.link ?? "?"), \(settled)"
            }
            return "\(head) RETURN \(e.reason ?? "?"): \(e.message ?? "")  [\(measured)] by \(e.link ?? "?")"
        case .coin:
            let stored = detail?["routing"]?.string == "tube" ? "kept in its change tube" : "stored in the cash box"
            let line = "\(head) CREDIT \(coin)  [\(measured)] \(stored)"
            return totals.map { "\(line)   total \(values($0))" } ?? line
        case .coinReturned:
            return "\(head) RETURNED AFTER ACCEPT \(coin): \(e.message ?? "")"
        case .coinUnconfirmed:
            return "\(head) UNCONFIRMED \(coin) (not credit): \(e.message ?? "")"
        case .creditOpened, .creditSpent, .creditRefunded, .creditReturned, .creditExpired:
            return "\(head) \(creditMove(e))"
        case .payoutRequested, .payoutDispensing, .payoutDone, .payoutPartial, .payoutFailed:
            return "\(head) \(payoutStep(e, currency: payoutCurrencies[detail?["request_id"]?.string ?? ""]))"
        case .tubesCounted:
            // `0:18,1:10` (type:count) → `18 of type 0, 10 of type 1`
            let tubes = (detail?["tubes"]?.string ?? "").split(separator: ",").map { pair in
                let parts = pair.split(separator: ":")
                return parts.count == 2 ? "\(parts[1]) of type \(parts[0])" : String(pair)
            }
            return "\(head) tubes counted (\(detail?["cause"]?.string ?? "?")): \(tubes.isEmpty ? "all empty" : tubes.joined(separator: ", "))"
        default:
            let fields = detail?.object ?? [:]
            let shown = fields.keys.sorted().filter { $0 != "collected" && $0 != "unconfirmed" }.map { "\($0)=\(fields[$0]!.string ?? fields[$0]!.description)" }
                .joined(separator: " ")
            return "\(head) \(e.kind) \(shown)"
        }
    }
}
