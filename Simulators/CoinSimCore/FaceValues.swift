import CoinFacts

/// What each coin is worth, as the simulator's ground truth states it: written out here from the
/// mints' own lists, apart from `CoinTables` (which coin-table credits from), so that a wrong
/// face value in the tables cannot hide behind `totals == truth`. A test holds the two equal.
///
/// Sources: US Mint, "Circulating Coins"; European Central Bank, "Euro coins"; Royal Mint,
/// "UK coins" (the values printed on the coins, in minor units).
public enum FaceValues {
    static let table: [String: [String: Int64]] = [
        "USD": ["cent": 1, "nickel": 5, "dime": 10, "quarter": 25, "half_dollar": 50, "dollar": 100],
        "EUR": ["EUR_1c": 1, "EUR_2c": 2, "EUR_5c": 5, "EUR_10c": 10, "EUR_20c": 20, "EUR_50c": 50, "EUR_1": 100, "EUR_2": 200],
        "GBP": ["GBP_1p": 1, "GBP_2p": 2, "GBP_5p": 5, "GBP_10p": 10, "GBP_20p": 20, "GBP_50p": 50, "GBP_1": 100, "GBP_2": 200],
    ]

    /// The face value of the coin `code` of `currency`, in minor units; nil for a coin the mints
    /// do not list.
    public static func value(currency: String, code: String) -> Int64? { table[currency]?[code] }

    /// The face value of a coin the simulator inserts; a coin the mints do not list is a defect
    /// of the simulator's tables, not something a run can go on from.
    static func faceValue(of spec: CoinSpec) -> Int64 {
        guard let value = value(currency: spec.currency, code: spec.code) else {
            preconditionFailure("FaceValues lists no \(spec.currency) \(spec.code): add its face value from the mint's list")
        }
        return value
    }

    /// Every (currency, code, value) listed.
    public static var all: [(currency: String, code: String, valueMinor: Int64)] {
        table.flatMap { currency, coins in coins.map { (currency, $0.key, $0.value) } }
    }
}
