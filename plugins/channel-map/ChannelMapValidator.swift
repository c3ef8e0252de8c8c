import CoinMechPluginABI
import CoinMechPluginKit

/// `channel-map`: for pulse mechs, maps the pulse count (channel) to a denomination. A channel
/// the map does not know is rejected as `unknown_channel`; readings without a channel pass.
final class ChannelMapValidator: SwiftValidator {
    struct Coin: Decodable {
        var code: String
        var value: Int64
    }

    struct Config: PluginConfiguration {
        var currency: String
        /// Channel number (as a string key) → denomination, e.g. {"1": {"code": "quarter", "value": 25}}.
        var channels: [String: Coin]
        static let keys: Set<String> = ["currency", "channels"]
    }

    private var accepts: [UInt32: DecisionTemplate] = [:]
    private let unknown = DecisionTemplate.reject(reason: "unknown_channel", message: "pulse count matches no configured channel")
    private let table: [String: String]
    /// The currency it credits, which its description declares.
    private let currency: String

    init(configJSON: String, host: PluginHost) throws(PluginConfigError) {
        let config = try Config.decode(configJSON)
        guard config.currency.utf8.count == 3 else { throw PluginConfigError("key 'currency' must be a 3-letter ISO 4217 code") }
        guard !config.channels.isEmpty else { throw PluginConfigError("key 'channels' must map at least one channel") }
        var table: [String: String] = [:]
        for (key, coin) in config.channels {
            guard let channel = UInt32(key), (1...64).contains(channel) else {
                throw PluginConfigError("key 'channels.\(key)': channels are numbers from 1 to 64")
            }
            guard coin.value > 0, !coin.code.isEmpty else { throw PluginConfigError("key 'channels.\(key)': needs a code and a positive value") }
            accepts[channel] = .accept(currency: config.currency.uppercased(), code: coin.code, valueMinor: coin.value)
            table[key] = coin.code
        }
        self.table = table
        currency = config.currency.uppercased()
    }

    func validate(_ reading: ReadingView, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        guard let channel = reading.channel else { return }
        (accepts[channel] ?? unknown).write(to: decision)
    }

    struct Description: Encodable {
        let currency: String
        let channels: [String: String]
    }

    func describe() -> String { jsonText(Description(currency: currency, channels: table)) }
}

@_cdecl("coinmech_plugin_entry")
public func coinmechPluginEntry(_ hostABI: UInt32, _ plugin: UnsafeMutablePointer<coinmech_plugin>?) -> Int32 {
    PluginExport.fill(
        plugin, hostABI: hostABI, name: "channel-map", version: "2.0.0", license: "LicenseRef-CoinMech",
        description: "for pulse mechs: accepts a configured pulse count as its denomination, rejects unknown ones",
        create: { PluginExport.create(ChannelMapValidator.self, $0, $1, $2, $3) },
        validate: { PluginExport.validate(ChannelMapValidator.self, $0, $1, $2) })
}
