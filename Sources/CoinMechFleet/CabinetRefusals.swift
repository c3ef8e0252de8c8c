import Foundation

/// What the fleet refused of each cabinet in this run, by kind: the counts `/metrics` shows and
/// the one `refused_messages` alert per cabinet says (docs/FLEET.md, "What a cabinet cannot do
/// to the fleet"). A pure value. A cabinet that sends what the contract forbids is broken or in
/// someone else's hands: the office hears of it once, with the figures kept current, and never
/// from more than `maxCabinets` cabinets at once (a broker without ACLs lets a client name any).
public struct CabinetRefusals: Sendable, Equatable {
    public struct Tally: Sendable, Equatable {
        public var counts: [FleetMessage.Refusal.Kind: Int] = [:]
        public var first: Double
        /// The last refusal's words, for the alert.
        public var last: String
    }

    public static let maxCabinets = 10_000
    public private(set) var tallies: [String: Tally] = [:]
    /// Refusals by kind, all cabinets (and topics that name none).
    public private(set) var totals: [FleetMessage.Refusal.Kind: Int] = [:]
    private var changed: Set<String> = []

    public init() {}

    public mutating func refused(_ refusal: FleetMessage.Refusal, now: Double) {
        totals[refusal.kind, default: 0] += 1
        guard let cabinet = refusal.cabinet, tallies[cabinet] != nil || tallies.count < Self.maxCabinets else { return }
        var tally = tallies[cabinet] ?? Tally(first: now, last: "")
        tally.counts[refusal.kind, default: 0] += 1
        tally.last = refusal.reason
        tallies[cabinet] = tally
        changed.insert(cabinet)
    }

    /// The alerts to write: each cabinet refused since the last save, with its words.
    public var unsaved: [(cabinet: String, detail: String)] {
        changed.sorted().compactMap { cabinet in tallies[cabinet].map { (cabinet, Self.detail($0)) } }
    }

    public mutating func saved() { changed.removeAll() }

    /// `refused 12 message(s) since …: 5 seq_range, 4 too_large, 3 malformed; the last: …`.
    static func detail(_ tally: Tally) -> String {
        let total = tally.counts.values.reduce(0, +)
        let kinds = tally.counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", ")
        let last = tally.last.count > 300 ? String(tally.last.prefix(300)) + "…" : tally.last
        return "refused \(total) message(s) since \(AlertRules.stamp(tally.first)): \(kinds); the last: \(last)"
    }
}
