import ArgumentParser
import CoinMechAudit
import CoinMechFailpoints
import CoinMechHarness
import CoinMechLedger
import CoinMechModel
import CoinSimCore
import Foundation

/// Which mech the crash suite plays.
enum CrashProtocol: String, ExpressibleByArgument, CaseIterable {
    case serial
    /// A ccTalk coin acceptor (`coinsim --protocol cctalk`): it takes coins itself, so the
    /// money is each credit event of its buffer, recorded once with its counter; and three
    /// payout hoppers on its bus, paying change asked for throughout the run.
    case cctalk
    /// An MDB coin changer (`coinsim --protocol mdb`): coins in as ccTalk's, and payouts out of
    /// its tubes, asked for throughout the run.
    case mdb

    var simulatorArguments: [String] { self == .serial ? [] : ["--protocol", rawValue] }

    /// Whether a daemon on this mech passes `point`: an acceptor is never answered or asked
    /// about a coin, and its batches pass before-commit, after-commit and published; a changer
    /// and the hoppers pay out.
    func passes(_ point: Failpoints.Point) -> Bool {
        switch point {
        case .readingParsed, .journalled, .answerWritten, .confirmationReceived, .confirmationCommitted: self == .serial
        case .payoutJournalled, .payoutDispensing, .payoutCounted: self != .serial
        // Only hoppers have inventory moves: a changer counts its own tubes.
        case .payoutMovesCommitted: self == .cctalk
        // No run refills or counts a hopper.
        case .inventoryCommitted: false
        // Only the MDB run has a sale application.
        case .creditCommitted: self == .mdb
        default: true
        }
    }
}



extension Run {
    /// The configuration and scenario of a ccTalk run: a euro acceptor on a single-wire bus,
    /// 2 coins a second (fewer than five events in the second a restarted daemon takes to read
    /// the buffer again), lost replies, NAKs and BUSYs.
    func writeCCTalkFiles(seed: UInt64) throws {
        let hoppers = Self.hoppers.map { "\n    - {address: \($0.address), coin: \($0.coin), currency: EUR}" }.joined()
        try FixtureDaemon.configuration(source: "\n  kind: cctalk\n  device: mech\n  hoppers:\(hoppers)", chain: FixtureChains.euroCoinIDs)
            .write(toFile: config, atomically: true, encoding: .utf8)
        try """
            name: crash-cctalk
            seed: \(seed)
            coins: 0
            rate_per_s: 2
            currency: EUR
            mix: {EUR_5c: 1, EUR_10c: 2, EUR_20c: 3, EUR_50c: 3, EUR_1: 4, EUR_2: 3}
            others: {slug: 0.05, foreign: 0.03, foreign_currency: GBP}
            cctalk:
              echo: true
              coins: {"1": EU005A, "2": EU010A, "3": EU020A, "4": EU050A, "5": EU100A, "6": EU200A}
              faults: {lost_reply: 0.02, nak: 0.01, busy: 0.01}
              hoppers:
            \(Self.hoppers.map { "    - {address: \($0.address), coin: \($0.coin), value_minor: \($0.value), coins: \($0.coins), pay_interval_ms: 120\($0.faults)}" }.joined(separator: "\n"))
            """.write(toFile: "\(dir)/crash.yaml", atomically: true, encoding: .utf8)
        // The operator's count of the hoppers as loaded, before the first daemon: the ledger's
        // levels start from the hoppers' real contents.
        let ledger = try Ledger(directory: "\(dir)/state")
        for (unit, hopper) in Self.hoppers.enumerated() {
            _ = try ledger.append([.inventory(InventoryChange(source: "cctalk", unit: unit, coinID: hopper.coin, valueMinor: hopper.value,
                                                              kind: .set(level: hopper.coins, by: "crash-suite")))])
        }
    }

    /// The hoppers: €2, 50c and 10c, full enough for the long run. The 50c one jams once and the
    /// €2 one loses power mid-payout once, early enough for the short run; every one loses
    /// replies, refuses with NAK or BUSY now and then and hides its serial number from the first
    /// ask after a power-up; the 10c one is exchanged for another after its third dispense.
    static let line = "lost_reply: 0.02, nak: 0.01, busy: 0.02, hide_serial: 1"
    static let hoppers: [(address: Int, coin: String, value: Int64, coins: Int, faults: String)] = [
        (3, "EU200A", 200, 250, ", faults: {power_down_after: 6, power_off_ms: 400, \(line)}"),
        (4, "EU050A", 50, 250, ", faults: {jam_after: 10, \(line)}"),
        (5, "EU010A", 10, 600, ", faults: {exchange_after: 3, \(line)}"),
    ]

    /// Euro amounts the payer asks for; 5c is refused (no hopper makes it).
    static let payoutAmounts: [Int64] = [10, 50, 60, 200, 250, 260, 370, 5, 120, 430]

    func cctalkAudit() throws -> CCTalkMoneyAudit {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let truth = try decoder.decode(CCTalkGroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        let ledger = try Ledger(directory: "\(dir)/state")
        return CCTalkMoneyAudit(truth: truth, events: try ledger.events(since: 0, limit: 100_000_000), source: "cctalk")
    }

    func hopperAudit() throws -> HopperMoneyAudit {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let truth = try decoder.decode(CCTalkGroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: "\(dir)/truth.json")))
        let ledger = try Ledger(directory: "\(dir)/state")
        return HopperMoneyAudit(hoppers: truth.hoppers, payouts: try ledger.payouts(source: "cctalk"), levels: try ledger.inventory(source: "cctalk"))
    }
}
