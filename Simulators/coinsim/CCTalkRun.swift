import ArgumentParser
import CoinSimCore
import Foundation

/// The line protocol the simulated mech speaks.
enum LineProtocol: String, ExpressibleByArgument, CaseIterable {
    /// The raw-sensor mech's `$CM…` sentences (docs/PROTOCOL.md, part two).
    case serial
    /// A ccTalk coin acceptor (docs/PROTOCOL.md, part three).
    case cctalk
    /// An MDB coin changer behind a USB/serial MDB master adapter (docs/HARDWARE.md).
    case mdb
}

extension SessionOptions {
    /// Runs a ccTalk session and writes its ground truth, as `finish` does for the raw-sensor mech.
    func finishCCTalk(_ simulator: CCTalkSimulator) throws {
        try play(simulator.run, ended: \.ended) { truth in
            let o = truth.outcomes
            return """
                \(truth.scenario) (ccTalk): \(truth.sent.insertions) inserted, \(o.credited) credited, \(o.inhibited) inhibited \
                (\(o.selfInhibited) unpolled), \(o.rejected) rejected; \(truth.lostEvents) events lost (\(truth.lostCredits) credits); \
                \(truth.polls.bufferPolls) buffer polls\(hoppers(truth)) (\(truth.ended))
                """
        }
    }

    /// "; hopper 3 (EU200A) paid 5 of 5 in 1 dispense …" for each hopper, if there are any.
    private func hoppers(_ truth: CCTalkGroundTruth) -> String {
        truth.hoppers.map { h in
            let asked = h.dispenses.map(\.asked).reduce(0, +)
            return "; hopper \(h.address) (\(h.coinId)) paid \(h.paidCoins) of \(asked) in \(h.dispenses.count) dispenses, \(h.coinsEnd) left"
        }.joined()
    }
}
