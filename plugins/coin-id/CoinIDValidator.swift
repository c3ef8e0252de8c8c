import CoinMechPluginABI
import CoinMechPluginKit

/// `coin-id`: for coin acceptors that classify coins themselves (ccTalk), maps the acceptor's
/// coin id ("EU200A") to a denomination. An id the map does not know is not credited
/// (`unknown_coin_id`). Its description lists what each id is credited as (`credits`), so the
/// host opens only those positions: the acceptor returns a coin of any other. Takes coin-id
/// readings only.
final class CoinIDValidator: SwiftValidator {
    struct Coin: Decodable {
        var code: String
        var value: Int64
    }

    struct Config: PluginConfiguration {
        var currency: String
        /// Coin id → denomination, e.g. {"EU200A": {"code": "EUR_2", "value": 200}}.
        var coins: [String: Coin]
        static let keys: Set<String> = ["currency", "coins"]
    }

    private var accepts: [CoinIDKey: DecisionTemplate] = [:]
    private let unknown = DecisionTemplate.reject(reason: "unknown_coin_id", message: "the acceptor's coin id matches no configured coin")
    private let table: [String: String]
    /// What each coin id is credited as: the host opens only the acceptor positions whose coin
    /// ids it finds here (and in its cabinet's coins), so no coin is taken that cannot be credited.
    private let credits: [String: Credit]

    struct Credit: Encodable {
        var currency: String
        var code: String
        var value: Int64
    }

    init(configJSON: String, host: PluginHost) throws(PluginConfigError) {
        let config = try Config.decode(configJSON)
        guard config.currency.utf8.count == 3 else { throw PluginConfigError("key 'currency' must be a 3-letter ISO 4217 code") }
        guard !config.coins.isEmpty else { throw PluginConfigError("key 'coins' must map at least one coin id") }
        var table: [String: String] = [:]
        var credits: [String: Credit] = [:]
        for (id, coin) in config.coins {
            guard !id.isEmpty, id.allSatisfy({ $0.isASCII && !$0.isWhitespace }), let key = CoinIDKey(id) else {
                throw PluginConfigError("key 'coins.\(id)': a coin id is 1 to 15 printable ASCII characters, e.g. EU200A")
            }
            guard coin.value > 0, !coin.code.isEmpty else { throw PluginConfigError("key 'coins.\(id)': needs a code and a positive value") }
            accepts[key] = .accept(currency: config.currency.uppercased(), code: coin.code, valueMinor: coin.value)
            table[id] = coin.code
            credits[id] = Credit(currency: config.currency.uppercased(), code: coin.code, value: coin.value)
        }
        self.table = table
        self.credits = credits
    }

    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        guard let key = reading.coinIDKey else { return }
        (accepts[key] ?? unknown).write(to: decision)
    }

    func describe() -> String { jsonText(Description(coins: table, credits: credits)) }

    struct Description: Encodable {
        var coins: [String: String]
        var credits: [String: Credit]
    }
}

@_cdecl("coinmech_plugin_entry")
public func coinmechPluginEntry(_ hostABI: UInt32, _ plugin: UnsafeMutablePointer<coinmech_plugin>?) -> Int32 {
    PluginExport.fill(
        plugin, hostABI: hostABI, name: "coin-id", version: "2.0.0", license: "LicenseRef-CoinMech",
        description: "for coin acceptors (ccTalk): credits a configured coin id as its denomination, not an unknown one",
        kinds: UInt32(COINMECH_KINDS_COIN_ID),
        create: { PluginExport.create(CoinIDValidator.self, $0, $1, $2, $3) },
        validate: { PluginExport.validate(CoinIDValidator.self, $0, $1, $2) })
}
