/// The daemon's figures at one point of the run, and whether a series of them levels off.
struct SoakSample: Sendable {
    var coins: Int
    var rssKiB: Int
    var descriptors: Int
    var threads: Int
    var ledgerKiB: Int
    var walKiB: Int
    /// The mech's answer time p99 over the coins since the sample before (from coinsim's truth).
    var answerP99Microseconds: Int = 0

    var line: String {
        "after \(coins) coins: RSS \(rssKiB) KiB, \(descriptors) descriptors, \(threads) threads, ledger \(ledgerKiB) KiB, WAL \(walKiB) KiB"
    }

    /// Growth that does not level off: after the first `warmUp` samples, RSS may wander by a tenth
    /// (and 4 MiB) of the warmed-up figure, descriptors and threads by 2, the WAL (checkpointed
    /// every 1,000 pages) stays under 16 MiB; the ledger grows with the coins, as it must.
    static func drift(_ samples: [SoakSample], warmUp: Int = 1) -> [String] {
        guard samples.count > warmUp else { return [] }
        let settled = Array(samples[warmUp...])
        let base = settled[0]
        var problems: [String] = []
        let rssBound = base.rssKiB + max(base.rssKiB / 10, 4096)
        for sample in settled where sample.rssKiB > rssBound {
            problems.append("RSS \(sample.rssKiB) KiB after \(sample.coins) coins, above \(rssBound) KiB (\(base.rssKiB) KiB after \(base.coins))")
        }
        for sample in settled where abs(sample.descriptors - base.descriptors) > 2 {
            problems.append("\(sample.descriptors) descriptors after \(sample.coins) coins, \(base.descriptors) after \(base.coins)")
        }
        for sample in settled where abs(sample.threads - base.threads) > 2 {
            problems.append("\(sample.threads) threads after \(sample.coins) coins, \(base.threads) after \(base.coins)")
        }
        for sample in samples where sample.walKiB > 16 * 1024 {
            problems.append("WAL \(sample.walKiB) KiB after \(sample.coins) coins: checkpoints do not keep up")
        }
        return problems
    }
}
