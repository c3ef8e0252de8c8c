/// How a daemon's log tells of an outage: its failure said loudly once, and again only after
/// the recovery was said. A ledger at its size cap can take a small batch into a page's free
/// space and then fail on the next, so "once per run" is not the claim; "never twice in a row,
/// at a level above debug" is.
struct OutageLog {
    /// The failure's lines above debug and the recovery's lines, in the order logged.
    var said: [Bool] = []

    init(_ stderr: String, failure: String, recovery: String) {
        for line in stderr.split(separator: "\n") where !line.hasPrefix("<7>") {
            if line.contains(failure) { said.append(true) } else if line.contains(recovery) { said.append(false) }
        }
    }

    /// At least one failure, the first before any recovery, and each failure after the first
    /// preceded by a recovery.
    var saidOncePerOutage: Bool {
        guard said.first == true else { return false }
        return !zip(said, said.dropFirst()).contains { $0 == $1 }
    }
}
