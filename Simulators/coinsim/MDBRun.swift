import CoinSimCore
import Foundation

extension SessionOptions {
    /// Runs an MDB session and writes its ground truth, as `finish` does for the raw-sensor mech.
    func finishMDB(_ simulator: MDBSimulator) throws {
        try play(simulator.run, ended: \.ended) { truth in
            let o = truth.outcomes
            let kept = truth.keptValue.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            return """
                \(truth.scenario) (MDB): \(truth.sent.insertions) inserted, \(o.tube) to tubes, \(o.cashBox) to the cash box, \
                \(o.rejected) returned, \(o.slugs) slugs; kept \(kept.isEmpty ? "nothing" : kept); \(truth.hostLines) host lines (\(truth.ended))
                """
        }
    }
}
