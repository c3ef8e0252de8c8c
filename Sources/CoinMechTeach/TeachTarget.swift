import CoinMechChain
import CoinMechConfiguration
import CoinMechCore
import CoinMechCalibration
import Foundation

/// What teach mode teaches: the running chain's coin-table link for a currency, with the
/// windows it has in force (the neighbours a taught window must keep clear of) and the
/// calibration file it reads, which teach mode writes.
package struct TeachTarget: Sendable {
    package let link: String
    package let currency: String
    package let code: String
    package let file: String
    package let table: CoinTableDescription

    /// The link for `currency` and `code` in `chain` (the first coin-table link for that
    /// currency decides first), or why teach mode cannot teach them.
    package static func resolve(currency: String, code: String, chain: Chain, source: String, stateDirectory: String) -> Result<TeachTarget, TeachFailure> {
        let currency = currency.uppercased()
        let tables = chain.links.filter { $0.origin.plugin == "coin-table" }
        let described = tables.compactMap { link in link.origin.description.flatMap(CoinTableDescription.parse).map { (link.name, $0) } }
        guard let (link, table) = described.first(where: { $0.1.currency == currency }) else {
            let known = described.compactMap { name, table in table.currency.map { "\(name): \($0)" } }
            return .failure(TeachFailure("no coin-table link for \(currency) in the chain"
                + (known.isEmpty ? " (it has none)" : " (\(known.joined(separator: ", ")))") + ": teach mode teaches a coin-table link's windows"))
        }
        guard table.denominations.contains(where: { $0.name == code }) else {
            return .failure(TeachFailure("link '\(link)' has no \(currency) denomination '\(code)' (known: \(table.denominations.map(\.name).joined(separator: ", ")))"))
        }
        let suggested = "${state_dir}/calibration/\(Self.fileStem(source))-\(currency).json"
        guard let file = table.calibration else {
            return .failure(TeachFailure("link '\(link)' reads no calibration file: add `calibration: \(suggested)` to its config, reload, then teach"))
        }
        guard file != "inline" else {
            return .failure(TeachFailure("link '\(link)' has its calibration inline; teach mode writes a file: set `calibration: \(suggested)` in its config, reload, then teach"))
        }
        let directory = URL(fileURLWithPath: stateDirectory).standardizedFileURL.path
        guard URL(fileURLWithPath: file).standardizedFileURL.path.hasPrefix(directory + "/") else {
            return .failure(TeachFailure("link '\(link)' reads its calibration from \(file), outside the state directory \(directory), "
                + "the only place teach mode writes: set `calibration: \(suggested)` in its config, reload, then teach"))
        }
        return .success(TeachTarget(link: link, currency: currency, code: code, file: file, table: table))
    }

    /// A source name as a file name: letters, digits, `.`, `_` and `-` kept, anything else `_`.
    package static func fileStem(_ source: String) -> String {
        String(source.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" })
    }
}

/// The parts of coin-table's `describe` (docs/PLUGINS.md) teach mode reads: the windows in force,
/// how wide they are in σ, and where the calibration comes from.
package struct CoinTableDescription: Decodable, Sendable {
    package struct Window: Decodable, Sendable {
        let name: String
        /// `nominal`, `taught` or `foreign`.
        let origin: String
        let diameter: CoinSpread.Axis
        let weight: CoinSpread.Axis
        let thickness: CoinSpread.Axis?

        var spread: CoinSpread { CoinSpread(diameter: diameter, weight: weight, thickness: thickness) }
    }

    /// Nil from a coin-table older than teach mode.
    package let currency: String?
    package let window: Double
    package let margin: Double
    package let sensor_noise: SensorNoise
    /// A path, `inline`, or nil.
    package let calibration: String?
    package let denominations: [Window]
    package let foreign: [Window]

    package static func parse(_ text: String) -> CoinTableDescription? {
        try? JSONDecoder().decode(CoinTableDescription.self, from: Data(text.utf8))
    }
}
