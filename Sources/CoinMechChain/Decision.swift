import CoinMechPluginABI

/// A reading with its verdict, the link that decided it and the chain generation that walked it.
///
/// The verdict is kept as the plugin wrote it and turned into Swift values on first use,
/// so deciding itself copies no strings and allocates nothing.
public struct Decision: Sendable {
    public let reading: Reading
    /// Name of the deciding link; `unrecognized` for the terminal link the host adds.
    public let linkName: String
    /// Generation of the chain that decided.
    public let chainGeneration: UInt64
    let raw: coinmech_decision

    init(reading: Reading, linkName: String, chainGeneration: UInt64, raw: coinmech_decision) {
        self.reading = reading
        self.linkName = linkName
        self.chainGeneration = chainGeneration
        self.raw = raw
    }

    /// A decision the host makes without walking the chain (e.g. `inhibited`).
    public init(reading: Reading, rejectedBy linkName: String, chainGeneration: UInt64, reason: String, message: String) {
        var raw = coinmech_decision.blank
        raw.verdict = COINMECH_VERDICT_REJECT.rawValue
        Self.write(reason, into: &raw.reason)
        Self.write(message, into: &raw.message)
        self.init(reading: reading, linkName: linkName, chainGeneration: chainGeneration, raw: raw)
    }

    /// Accept or reject. A chain always decides, so there is no `pass` here.
    public var verdict: Verdict {
        switch raw.linkVerdict() {
        case .decided(let verdict): verdict
        case .pass: .reject(Rejection(reason: "unrecognized", message: "no link recognised the coin"))
        }
    }

    public var isAccept: Bool { raw.verdict == COINMECH_VERDICT_ACCEPT.rawValue && verdict.isAccept }

    static func write<T>(_ string: String, into field: inout T) {
        withUnsafeMutableBytes(of: &field) { bytes in
            let utf8 = Array(string.utf8.prefix(bytes.count - 1))
            bytes.copyBytes(from: utf8)
            bytes[utf8.count] = 0
        }
    }
}
