import CoinMechChain
import CoinMechConfiguration
import CoinMechDaemon
import CoinMechSettings
@testable import CoinMechTestSupport
import Testing

/// A cabinet that names no currency (`source.currencies`) used to take the coins of every mint
/// currency CoinMech knows: a plugin claiming €2 in a USD cabinet was credited, with a warning.
/// It now takes the currencies its chain's links declare, and refuses a chain that declares none.
@Suite("Cabinet currencies: fail closed without source.currencies")
struct CabinetCurrencyTests {
    /// The daemon's chain for `chain` (YAML) with `source`, from a directory holding the
    /// misbehaving fixture and the shipped coin-table and sanity.
    static func chain(_ chain: String, source: String = "{kind: serial, device: mech}") throws -> Chain {
        let dir = TestSupport.temporaryDirectory("currencies")
        _ = try TestSupport.compileFixture("misbehaving", into: dir, as: "libmisbehaving.so")
        for plugin in ["coin-table", "sanity"] { _ = try TestSupport.copyBuiltPlugin(plugin, into: dir) }
        let table = try SettingsTable.parse("source: \(source)\nstate_dir: \(dir)/state\ncache_dir: \(dir)/cache\nplugin_dir: \(dir)\nchain: \(chain)\n", file: "c.yaml")
        let configuration = try DaemonConfiguration.parse(table, pluginDirectory: dir)
        return try Daemon.buildChain(configuration, generation: 1, logger: nil)
    }

    @Test("without source.currencies, a €2 a plugin claims in a chain whose links declare USD is a lie, returned; USD is credited")
    func undeclaredCurrencyIsALie() throws {
        let chain = try Self.chain("[{name: third-party, plugin: misbehaving, config: {mode: euro_two}}, {name: usd, plugin: coin-table, config: {currency: USD}}]")
        #expect(chain.acceptPolicy.coins.currencies == ["USD"])
        let decision = chain.decide(.coin(24.26, 5.67))
        #expect(decision.rejection == Rejection(reason: "plugin_lie", message: "plugin accepted a coin this cabinet does not take: EUR is not this cabinet's currency (USD)"))
        let quarters = try Self.chain("[{plugin: sanity}, {name: usd, plugin: coin-table, config: {currency: USD}}]")
        #expect(quarters.decide(.coin(24.26, 5.67, thickness: 1.75)).isAccept)
    }

    @Test("without source.currencies, a chain no link of which declares a currency is refused, naming the key")
    func noCurrencyRefused() throws {
        do {
            _ = try Self.chain("[{plugin: sanity}, {name: third-party, plugin: misbehaving, config: {mode: euro_two}}]")
            Issue.record("a chain that declares no currency was built")
        } catch let error as DaemonError {
            #expect("\(error)".contains("source.currencies"), "\(error)")
            #expect("\(error)".contains("no link of the chain declares a currency it credits"), "\(error)")
        }
    }

    @Test("with source.currencies, the cabinet takes those and its links' declarations do not add any")
    func configuredCurrencies() throws {
        let chain = try Self.chain("[{name: eur, plugin: coin-table, config: {currency: EUR}}]", source: "{kind: serial, device: mech, currencies: [USD]}")
        #expect(chain.acceptPolicy.coins.currencies == ["USD"])
    }
}
