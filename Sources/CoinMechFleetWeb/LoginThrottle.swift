/// Failed logins, per operator name and per source address, and how long each must wait before
/// its next try (docs/FLEET.md, "The dashboard"). A pure value; `LoginGate` holds it.
///
/// A few failures are free (a typo, a forgotten caps lock); after them the wait doubles with
/// each failure, up to `maxWait`. A source's wait protects every account from it; a name's
/// protects one account from many sources, and is shorter so that its owner is kept out for at
/// most a minute by someone else's guessing. A success clears the name and the source. Guesses
/// are refused here, before the operator is looked up and before any password is hashed.
struct LoginThrottle: Sendable, Equatable {
    struct Record: Sendable, Equatable {
        var failures = 0
        /// No try before this (seconds since 1970).
        var until = 0.0
        var last = 0.0
    }

    struct Rule: Sendable, Equatable {
        var free: Int
        var maxWait: Double
    }

    static let source = Rule(free: 3, maxWait: 300)
    static let name = Rule(free: 5, maxWait: 60)
    /// Records kept at most, each kind: beyond, those idle longest are forgotten.
    static let capacity = 10_000

    private(set) var sources: [String: Record] = [:]
    private(set) var names: [String: Record] = [:]

    /// Seconds `name` from `source` must still wait, or nil: it may try now.
    func wait(name: String, source: String, now: Double) -> Double? {
        let until = max(sources[source]?.until ?? 0, names[name]?.until ?? 0)
        return until > now ? until - now : nil
    }

    /// Whether neither has failed lately: its check goes ahead of a guesser's.
    func isClean(name: String, source: String) -> Bool {
        (sources[source]?.failures ?? 0) == 0 && (names[name]?.failures ?? 0) == 0
    }

    mutating func failed(name: String, source: String, now: Double) {
        Self.fail(&sources, source, Self.source, now: now)
        Self.fail(&names, name, Self.name, now: now)
    }

    mutating func succeeded(name: String, source: String) {
        sources[source] = nil
        names[name] = nil
    }

    private static func fail(_ records: inout [String: Record], _ key: String, _ rule: Rule, now: Double) {
        if records[key] == nil && records.count >= capacity {
            // The longest idle go: an attacker naming many sources or names forgets its own first.
            let idle = records.sorted { $0.value.last < $1.value.last }.prefix(capacity / 10).map(\.key)
            for gone in idle { records[gone] = nil }
        }
        var record = records[key] ?? Record()
        record.failures += 1
        record.last = now
        let over = record.failures - rule.free
        if over > 0 { record.until = now + min(rule.maxWait, Double(1 << min(over - 1, 20))) }
        records[key] = record
    }
}
