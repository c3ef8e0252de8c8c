import CoinMechCore
import CoinMechModel
import CoinSimCore
import Foundation
import Testing

/// The payout core on random interleavings against coinsim's devices (`PayoutRig`): every seed
/// a session of payouts, repeats, refills, commits that land and report a failure, failed
/// reads, kills after any output and lost replies, judged against the devices' truth. A
/// failing seed names the command that repeats it.
@Suite("Payout rig: the payout core against coinsim's changer and hoppers, on random interleavings, kills and lost replies")
struct PayoutRigTests {
    static let changerCapabilities: PayoutCapabilities = [.countsItsUnits, .identifies]
    static let hopperCapabilities: PayoutCapabilities = [.ledgerKeepsLevels, .identifies]

    static func changer(seed: UInt64, tracing: Bool = false) -> PayoutRig<RigChanger> {
        var rig = PayoutRig(seed: seed, capabilities: changerCapabilities) { RigChanger(random: &$0, faults: true) }
        rig.tracing = tracing
        rig.run()
        return rig
    }

    /// A level-3 changer that pays values itself (the core asks a value, not coins).
    static func valueChanger(seed: UInt64, tracing: Bool = false) -> PayoutRig<RigChanger> {
        var rig = PayoutRig(seed: seed, capabilities: changerCapabilities.union(.paysValue)) { RigChanger(random: &$0, faults: true, alternativePayout: true) }
        rig.tracing = tracing
        rig.run()
        return rig
    }

    static func hoppers(seed: UInt64, resendLostDispense: Bool = false, tracing: Bool = false) -> PayoutRig<RigHoppers> {
        var rig = PayoutRig(seed: seed, capabilities: hopperCapabilities) { random in
            var hoppers = RigHoppers(random: &random, faults: true)
            hoppers.resendsLostDispense = resendLostDispense
            return hoppers
        }
        rig.tracing = tracing
        rig.run()
        return rig
    }

    static func repeatCommand(_ device: String, _ seed: UInt64) -> String {
        "repeat it (PAYOUT_RIG_TRACE=1 prints what it did): PAYOUT_RIG_DEVICE=\(device) PAYOUT_RIG_SEED=\(seed) swift test --filter PayoutRigTests/repeatSeed"
    }

    @Test("an MDB changer: 300 seeds, nothing paid twice, every coin that left on the ledger, nothing open", arguments: UInt64(1)...300)
    func changer(seed: UInt64) {
        let rig = Self.changer(seed: seed)
        #expect(rig.problems.isEmpty, "payout rig seed \(seed) (changer): \(rig.problems.joined(separator: "; ")); \(Self.repeatCommand("changer", seed))")
    }

    @Test("an MDB changer paying values itself (level 3): 150 seeds, nothing paid twice, every coin that left on the ledger, nothing open", arguments: UInt64(1)...150)
    func valueChanger(seed: UInt64) {
        let rig = Self.valueChanger(seed: seed)
        #expect(rig.problems.isEmpty, "payout rig seed \(seed) (value changer): \(rig.problems.joined(separator: "; ")); \(Self.repeatCommand("value-changer", seed))")
        #expect(rig.valueSteps > 0 || rig.payouts == 0, "seed \(seed): a level-3 changer was never asked a value")
    }

    @Test("ccTalk hoppers: 300 seeds, nothing paid twice, every coin that left on the ledger, levels as the hoppers hold", arguments: UInt64(1)...300)
    func hoppers(seed: UInt64) {
        let rig = Self.hoppers(seed: seed)
        #expect(rig.problems.isEmpty, "payout rig seed \(seed) (hoppers): \(rig.problems.joined(separator: "; ")); \(Self.repeatCommand("hoppers", seed))")
    }

    @Test("the rig meets what it is for: kills, commits that landed and reported a failure, failed reads, lost replies, NAK, BUSY, jams, deposits")
    func faultsReached() {
        var kills = 0, landed = 0, reads = 0, payouts = 0
        var device: [String: Int] = [:]
        for seed in UInt64(1)...20 {
            let changer = Self.changer(seed: seed), hoppers = Self.hoppers(seed: seed)
            kills += changer.kills + hoppers.kills
            landed += changer.landedReportedFailed + hoppers.landedReportedFailed
            reads += changer.readsFailed + hoppers.readsFailed
            payouts += changer.payouts + hoppers.payouts
            device.merge(changer.device.faults) { $0 + $1 }
            device.merge(hoppers.device.faults) { $0 + $1 }
        }
        #expect(kills > 0 && landed > 0 && reads > 0 && payouts > 0, "kills \(kills), landed \(landed), reads \(reads), payouts \(payouts)")
        for fault in ["lost_reply", "nak", "busy", "jam", "tube_lag", "deposit"] { #expect(device[fault, default: 0] > 0, "no \(fault) in 20 seeds: \(device)") }
    }

    @Test("a planted double-pay is found: a hopper dispense whose reply is lost, sent again as if it were idempotent")
    func plantedDoublePay() {
        // The defect `CCTalkRequest.isIdempotent` prevents: the bank's dispense asked again
        // after a lost reply. The hopper took the first; it pays twice.
        let caught = (UInt64(1)...60).first { seed in
            Self.hoppers(seed: seed, resendLostDispense: true).problems.contains { $0.hasPrefix("PAID TWICE") }
        }
        #expect(caught != nil, "no seed of 60 caught a dispense sent twice")
        if let caught {
            // The same seed is clean without the defect.
            #expect(Self.hoppers(seed: caught).problems.isEmpty)
        }
    }

    @Test("repeat one seed: PAYOUT_RIG_SEED=N, PAYOUT_RIG_DEVICE=changer or hoppers, PAYOUT_RIG_TRACE=1 to print what it did")
    func repeatSeed() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let text = environment["PAYOUT_RIG_SEED"], let seed = UInt64(text) else { return }
        let tracing = environment["PAYOUT_RIG_TRACE"] == "1"
        let (problems, trace) = switch environment["PAYOUT_RIG_DEVICE"] {
        case "changer": { let rig = Self.changer(seed: seed, tracing: tracing); return (rig.problems, rig.trace) }()
        case "value-changer": { let rig = Self.valueChanger(seed: seed, tracing: tracing); return (rig.problems, rig.trace) }()
        default: { let rig = Self.hoppers(seed: seed, tracing: tracing); return (rig.problems, rig.trace) }()
        }
        if tracing { print(trace.joined(separator: "\n")) }
        #expect(problems.isEmpty, "payout rig seed \(seed): \(problems.joined(separator: "\n"))")
    }
}
