/// The chains the end-to-end tests, the crash suite and the benches run coinmechd with, spelled
/// once. Each is one line of YAML (flow style), so it reads the same at any indentation of the
/// configuration it goes into.
public enum FixtureChains {
    /// The chain the end-to-end tests and the crash suite judge: a sanity check, a weight floor
    /// at 1.5 g, and coin-table for US coins.
    public static let usd = """
        chain: [{plugin: sanity}, {plugin: weight-floor, config: {min_weight_g: 1.5}}, \
        {name: usd, plugin: coin-table, config: {currency: USD, tolerance: 0.04}}]
        """

    /// A ccTalk acceptor's chain: coin-id crediting the six euro coin ids coinsim's acceptor
    /// reports (config/cctalk.yaml's).
    public static let euroCoinIDs = """
        chain: [{name: euro, plugin: coin-id, config: {currency: EUR, coins: {\
        EU005A: {code: EUR_5c, value: 5}, EU010A: {code: EUR_10c, value: 10}, EU020A: {code: EUR_20c, value: 20}, \
        EU050A: {code: EUR_50c, value: 50}, EU100A: {code: EUR_1, value: 100}, EU200A: {code: EUR_2, value: 200}}}}]
        """

    /// An MDB changer's chain: coin-id crediting the USD coin ids coinsim's changer reports
    /// (config/mdb.yaml's).
    public static let usdCoinIDs = """
        chain: [{name: usd, plugin: coin-id, config: {currency: USD, coins: {\
        USD5: {code: nickel, value: 5}, USD10: {code: dime, value: 10}, USD25: {code: quarter, value: 25}, \
        USD50: {code: half_dollar, value: 50}, USD100: {code: dollar, value: 100}}}}]
        """
}
