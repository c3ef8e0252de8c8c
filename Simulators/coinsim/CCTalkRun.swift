import ArgumentParser
import CoinSimCore
import Foundation

/// The line protocol the simulated mech speaks.
enum LineProtocol: String, ExpressibleByArgument, CaseIterable {
    /// The raw-sensor mech's `$CM…` sentences (docs/PROTOCOL.md, part two).
    case serial
    /// A ccTalk coin acceptor (docs/PROTOCOL.md, part three).
    case cctalk
}

extension SessionOptions {
    /// Runs a ccTalk session and writes its ground truth, as `finish` does for the raw-sensor mech.
    func finishCCTalk(_ simulator: CCTalkSimulator) throws {
        let truth: CCTalkGroundTruth
        do {
            truth = try simulator.run()
        } catch {
            FileHandle.standardError.write(Data("coinsim: \(error)\n".utf8))
            throw ExitCode(2)
        }
        let json = try truthEncoder().encode(truth)
        if let path = self.truth {
            try json.write(to: URL(fileURLWithPath: path), options: .atomic)
        } else {
            FileHandle.standardOutput.write(json + Data("\n".utf8))
        }
        let o = truth.outcomes
        FileHandle.standardError.write(Data("""
            coinsim: \(truth.scenario) (ccTalk): \(truth.sent.insertions) inserted, \(o.credited) credited, \(o.inhibited) inhibited \
            (\(o.selfInhibited) unpolled), \(o.rejected) rejected; \(truth.lostEvents) events lost (\(truth.lostCredits) credits); \
            \(truth.polls.bufferPolls) buffer polls (\(truth.ended))

            """.utf8))
        if let link { unlink(link) }
        if truth.ended == "host_timeout" { throw ExitCode(3) }
    }
}
