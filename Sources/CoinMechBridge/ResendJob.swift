import CoinMechProtocol

/// One `cmd/resend` (docs/FLEET.md): seqs `from` … `to` read from the ledger a page at a time
/// and published again within the in-flight bound, with no I/O here. It does not touch the
/// cursor. Done once every copy is PUBACKed; a broker reconnect sends the unacked ones again.
public struct ResendJob: Sendable {
    public let command: FleetCommand
    public let from: Int64
    /// The last seq wanted: the command's `to`, cut to the ledger's end once a page shows it.
    public private(set) var to: Int64?
    /// The next seq whose presence in the ledger is not yet known.
    private var readFrom: Int64
    private var buffer: [(seq: Int64, event: JSON)] = []
    private var inFlight: [Int32: Int64] = [:]
    /// The highest seq published once: `resent` counts seqs, not copies.
    private var highestSent: Int64
    public private(set) var resent = 0
    /// Ranges inside `from` … `to` that the ledger does not hold.
    public private(set) var missing: [ClosedRange<Int64>] = []
    private var missingKnownThrough: Int64
    public static let page: Int64 = 1000

    public init(_ command: FleetCommand, from: Int64, to: Int64?) {
        self.command = command
        self.from = from
        self.to = to
        readFrom = from
        highestSent = from - 1
        missingKnownThrough = from - 1
    }

    /// The `events` request to make next (`since`, `limit`), when the buffer is empty.
    public var wantsPage: (since: Int64, limit: Int64)? {
        guard buffer.isEmpty, to.map({ readFrom <= $0 }) ?? true else { return nil }
        return (readFrom - 1, min(Self.page, to.map { $0 - readFrom + 1 } ?? Self.page))
    }

    /// The page `events(since: readFrom - 1, limit)` answered. One shorter than asked is the
    /// ledger's end: `to` is cut to it.
    public mutating func took(page: [JSON], limit: Int64) {
        var expected = readFrom
        for event in page {
            guard let seq = event["seq"]?.int, seq >= expected, to.map({ seq <= $0 }) ?? true else { continue }
            if seq > expected { noteMissing(expected...(seq - 1)) }
            buffer.append((seq, event))
            expected = seq + 1
        }
        if Int64(page.count) < limit {
            // The ledger's end: nothing beyond the last seq it gave.
            to = min(to ?? (expected - 1), expected - 1)
            readFrom = expected
        } else {
            readFrom = max(expected, (page.last?["seq"]?.int ?? 0) + 1)
            if let to, readFrom > to, expected <= to { noteMissing(expected...to) }
        }
    }

    /// The next copy to publish, within the room the caller has.
    public mutating func nextToSend() -> (seq: Int64, event: JSON)? {
        buffer.isEmpty ? nil : buffer.removeFirst()
    }

    /// A copy taken that could not be handed over: first again.
    public mutating func putBack(_ seq: Int64, _ event: JSON) { buffer.insert((seq, event), at: 0) }

    public mutating func sent(_ seq: Int64, mid: Int32) {
        inFlight[mid] = seq
        if seq > highestSent {
            highestSent = seq
            resent += 1
        }
    }

    /// True if `mid` was one of this job's.
    public mutating func puback(_ mid: Int32) -> Bool { inFlight.removeValue(forKey: mid) != nil }

    public var inFlightCount: Int { inFlight.count }

    /// The broker connection was lost: what was not PUBACKed goes again, from the lowest.
    public mutating func brokerLost() {
        guard let lowest = (inFlight.values + buffer.map(\.seq)).min() else { return }
        inFlight.removeAll()
        buffer.removeAll()
        readFrom = lowest
    }

    public var isDone: Bool { to.map { readFrom > $0 } ?? false && buffer.isEmpty && inFlight.isEmpty }

    /// The reply's `result`.
    public var result: JSON {
        ["from": .int(from), "to": to.map { .int($0) } ?? .null, "resent": .int(Int64(resent)),
         "missing": .array(missing.map { [.int($0.lowerBound), .int($0.upperBound)] })]
    }

    private mutating func noteMissing(_ range: ClosedRange<Int64>) {
        guard range.upperBound > missingKnownThrough else { return }
        let fresh = max(range.lowerBound, missingKnownThrough + 1)...range.upperBound
        if let last = missing.last, last.upperBound + 1 == fresh.lowerBound {
            missing[missing.count - 1] = last.lowerBound...fresh.upperBound
        } else {
            missing.append(fresh)
        }
        missingKnownThrough = fresh.upperBound
    }
}
