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
                \(truth.polls.bufferPolls) buffer polls (\(truth.ended))
                """
        }
    }
}
