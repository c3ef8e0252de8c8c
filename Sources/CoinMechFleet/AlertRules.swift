import Foundation

/// The alerts a cabinet's facts call for now (docs/FLEET.md, "The fleet service"). Pure: the
/// ingest opens a row for each condition without an open one, and closes the open rows of these
/// kinds whose condition has gone. `events_missing` and `ledger_conflict` are opened by the
/// ingest itself and closed only by an operator.
public enum AlertRules {
    /// The kinds this evaluates, and so may close.
    public static let kinds: Set<String> = [
        "offline", "no_credit", "jam", "tamper", "ledger_failing", "plugin_quarantined", "unconfirmed_coins", "acceptor_lost_events", "seq_gap",
    ]

    public struct Facts: Sendable, Equatable {
        public var cabinet: String
        /// nil: no `state` heard yet.
        public var online: Bool?
        public var stateSince: Double?
        public var firstSeen: Double
        public var lastCredit: Double?
        /// The last `mech_status` reported (`JAM`, `TAMPER`, `OK` …), nil if none.
        public var mechStatus: String?
        public var ledgerFailing: Bool
        public var quarantinedLinks: [String]
        public var unconfirmed: Int
        public var acceptorLostEvents: Int
        public var hole: ClosedRange<Int64>?
        public var holeSince: Double?
        /// From the ingest's `CabinetHearing`: how long the fleet has listened since the last
        /// word, and what the bridge promised. nil: no promise made.
        public var silence: CabinetHearing.Silence?

        public init(cabinet: String, online: Bool?, stateSince: Double?, firstSeen: Double, lastCredit: Double?, mechStatus: String?, ledgerFailing: Bool,
                    quarantinedLinks: [String], unconfirmed: Int, acceptorLostEvents: Int, hole: ClosedRange<Int64>?, holeSince: Double?) {
            self.cabinet = cabinet
            self.online = online
            self.stateSince = stateSince
            self.firstSeen = firstSeen
            self.lastCredit = lastCredit
            self.mechStatus = mechStatus
            self.ledgerFailing = ledgerFailing
            self.quarantinedLinks = quarantinedLinks
            self.unconfirmed = unconfirmed
            self.acceptorLostEvents = acceptorLostEvents
            self.hole = hole
            self.holeSince = holeSince
        }
    }

    public struct Condition: Sendable, Hashable {
        public var kind: String
        public var detail: String
        public init(kind: String, detail: String) {
            self.kind = kind
            self.detail = detail
        }
    }

    public static func evaluate(_ facts: Facts, now: Double, _ settings: FleetConfiguration.Alerts, gapGrace: Double) -> [Condition] {
        var out: [Condition] = []
        if facts.online == false, let since = facts.stateSince, now - since >= settings.offlineAfterSeconds {
            out.append(Condition(kind: "offline", detail: "offline for \(minutes(now - since)) (since \(stamp(since)))"))
        } else if facts.online == true, let silence = facts.silence, silence.listenedFor - silence.allowed >= settings.offlineAfterSeconds {
            // Its retained state says online, but its bridge has not kept its word: it died
            // where no will could be sent (the broker away), or it hangs.
            out.append(Condition(kind: "offline", detail: "silent for \(minutes(silence.listenedFor)) of listening (last heard \(stamp(silence.since))) though its state says online: its bridge may have died while the broker was away"))
        }
        let quietSince = facts.lastCredit ?? facts.firstSeen
        if now - quietSince >= settings.noCreditSeconds, isOpen(now, settings) {
            let what = facts.lastCredit == nil ? "no credit since the fleet first heard of it" : "no credit since \(stamp(quietSince))"
            out.append(Condition(kind: "no_credit", detail: "\(what) (\(minutes(now - quietSince)))"))
        }
        switch facts.mechStatus?.uppercased() {
        case "JAM": out.append(Condition(kind: "jam", detail: "the mech reports a jam"))
        case "TAMPER": out.append(Condition(kind: "tamper", detail: "the mech reports tampering"))
        default: break
        }
        if facts.ledgerFailing { out.append(Condition(kind: "ledger_failing", detail: "the cabinet's ledger cannot write: it returns every coin")) }
        if !facts.quarantinedLinks.isEmpty {
            out.append(Condition(kind: "plugin_quarantined", detail: "quarantined: \(facts.quarantinedLinks.sorted().joined(separator: ", "))"))
        }
        if facts.unconfirmed > 0 {
            out.append(Condition(kind: "unconfirmed_coins", detail: "\(facts.unconfirmed) coin(s) unconfirmed since the last collection"))
        }
        if facts.acceptorLostEvents > 0 {
            out.append(Condition(kind: "acceptor_lost_events", detail: "\(facts.acceptorLostEvents) acceptor event(s) lost since the last collection"))
        }
        if let hole = facts.hole, let since = facts.holeSince, now - since >= gapGrace {
            out.append(Condition(kind: "seq_gap", detail: "seq \(hole.lowerBound)…\(hole.upperBound) missing for \(minutes(now - since)); resend asked"))
        }
        return out
    }

    /// Whether `now` falls in the opening hours, in the fleet's time zone.
    static func isOpen(_ now: Double, _ settings: FleetConfiguration.Alerts) -> Bool {
        guard let hours = settings.openingHours else { return true }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: settings.timeZone) ?? TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.hour, .minute], from: Date(timeIntervalSince1970: now))
        return hours.contains((parts.hour ?? 0) * 60 + (parts.minute ?? 0))
    }

    static func minutes(_ seconds: Double) -> String {
        seconds < 120 ? "\(Int(seconds)) s" : seconds < 7200 ? "\(Int(seconds / 60)) min" : "\(Int(seconds / 3600)) h"
    }

    static func stamp(_ time: Double) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: time))
    }
}
