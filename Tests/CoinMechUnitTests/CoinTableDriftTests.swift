import CoinMechChain
import CoinMechPlugins
@testable import CoinMechTestSupport
import Foundation
import Testing

/// A coin-table link loaded through the real loader, its log lines kept.
private final class LoggedTable {
    let chain: Chain
    private let lines = LogLines()

    init(_ config: String) throws {
        let lines = lines
        let environment = ChainEnvironment(log: { _, level, message in lines.append("\(level): \(message)") })
        chain = try ChainBuilder(loader: TestSupport.loader(), environment: environment)
            .build(generation: 1, links: [LinkSpec(name: "usd", plugin: "coin-table", configJSON: config)])
    }

    var log: [String] { lines.all }

    /// The drift the link follows now, from its explanation of any reading (relative, per axis,
    /// and "coins"); nil when it follows none.
    func drift() throws -> [String: Double]? {
        let instance = try #require(chain.links[0].validator as? PluginInstance)
        let json = try #require(instance.explain(.coin(24.26, 5.67, thickness: 1.75)))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        return object["drift"] as? [String: Double]
    }
}

@Suite("coin-table follows the mech's drift: learnt from coins credited beyond doubt, bounded, logged")
struct CoinTableDriftTests {
    static let usd = MintFigures.usd
    static let noise = (0.003, 0.01, 0.02)

    /// The USD coins in turn, `count` of each, read on a mech whose bias is `bias(i)` at coin i.
    static func stream(count: Int, seed: UInt64, bias: (Int) -> (Double, Double, Double)) -> [Reading] {
        var readings: [Reading] = []
        for round in 0..<count {
            for (offset, coin) in usd.enumerated() {
                let i = round * usd.count + offset
                readings += noisyReadings(coin.1, coin.2, coin.3, count: 1, seed: seed &+ UInt64(i), noise: noise, bias: bias(i))
            }
        }
        return readings
    }

    @Test("a mech reading 2 % heavy and 0.4 % small: the drift is learnt to within 0.3 %, and fewer coins are returned than with windows held still")
    func learnsBias() throws {
        let following = try LoggedTable(#"{"currency":"USD","sensor_noise":{"diameter":0.003,"weight":0.01,"thickness":0.02}}"#)
        let still = try LoggedTable(#"{"currency":"USD","sensor_noise":{"diameter":0.003,"weight":0.01,"thickness":0.02},"follow_drift":false}"#)
        let readings = Self.stream(count: 500, seed: 1, bias: { _ in (-0.004, 0.02, 0.0) })
        var returned = (following: 0, still: 0)
        for (index, reading) in readings.enumerated() {
            let a = following.chain.decide(reading), b = still.chain.decide(reading)
            // Judged after the first 400 coins, once learnt.
            guard index >= 400 else { continue }
            if a.denomination == nil { returned.following += 1 }
            if b.denomination == nil { returned.still += 1 }
            // Nothing is credited as another coin either way.
            let truth = Self.usd[index % Self.usd.count].0
            #expect(a.denomination.map { $0.code == truth } ?? true)
            #expect(b.denomination.map { $0.code == truth } ?? true)
        }
        let drift = try #require(try following.drift())
        #expect(abs(drift["weight"]! - 0.02) < 0.003, "\(drift)")
        #expect(abs(drift["diameter"]! - -0.004) < 0.003, "\(drift)")
        #expect(abs(drift["thickness"]!) < 0.01, "\(drift)")
        #expect(drift["coins"]! > 1_000)
        #expect(returned.following * 3 < returned.still, "\(returned) of 1,600")
        // Audited: the journal hears of each point the drift moves.
        #expect(following.log.contains { $0.contains("following the mech's drift from ") && $0.contains("weight +2.0 %") }, "\(following.log)")
        #expect(still.log.isEmpty)
        #expect(try still.drift() == nil)
    }

    @Test("a drift past max_drift is followed to the bound and no farther; the log says the mech needs service")
    func bounded() throws {
        let table = try LoggedTable(#"{"currency":"USD","sensor_noise":{"diameter":0.003,"weight":0.01,"thickness":0.02},"max_drift":0.03}"#)
        // The load cell drifts from 0 to +8 % over 4,000 coins.
        let readings = Self.stream(count: 1_000, seed: 2, bias: { i in (0, 0.08 * Double(i) / 4_000, 0) })
        var credited = 0
        for reading in readings where table.chain.decide(reading).denomination != nil { credited += 1 }
        let drift = try #require(try table.drift())
        #expect(abs(drift["weight"]! - 0.03) < 1e-9, "\(drift)")
        #expect(table.log.contains { $0.hasPrefix("warning") && $0.contains("weight +3.0 %") && $0.contains("at its bound") }, "\(table.log)")
        // Past the bound, coins read heavier than the window allows are returned, not credited.
        #expect(credited < readings.count)
    }

    @Test("a coin credited near the edge of its window teaches nothing; one near its centre does")
    func edgeCoinsTeachNothing() throws {
        let quarter = Self.usd.first { $0.0 == "quarter" }!
        let config = #"{"currency":"USD","sensor_noise":{"diameter":0.003,"weight":0.01,"thickness":0.02}}"#
        // The quarter's weight σ here is √(1.33² + 1²) = 1.67 %: 5 % heavy is 3σ, inside the 4σ
        // window and outside the 2.5σ a coin must lie within to teach.
        for (heavy, teaches) in [(0.05, false), (0.01, true)] {
            let table = try LoggedTable(config)
            let readings = noisyReadings(quarter.1, quarter.2, quarter.3, count: 500, seed: 4, noise: (0, 0, 0), bias: (0, heavy, 0))
            let credited = readings.filter { table.chain.decide($0).denomination?.code == "quarter" }.count
            #expect(credited == 500, "\(heavy): \(credited)")
            let drift = try #require(try table.drift())
            #expect(drift["coins"] == (teaches ? 500 : 0), "\(heavy): \(drift)")
            if teaches { #expect(abs(drift["weight"]! - heavy) < 0.001, "\(drift)") }
        }
    }
}
