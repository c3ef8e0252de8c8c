import CoinMechPluginABI

/// The verdict on one reading, the link that decided it and the chain generation that walked it.
///
/// The verdict is kept as the plugin wrote it and turned into Swift values on first use,
/// so deciding itself copies no strings and allocates nothing. The reading stays with the
/// caller, which pairs the two (a ledger event holds both).
public struct Decision: Sendable {
    /// Name of the deciding link; `unrecognized` for the terminal link the host adds.
    public var linkName: String { linkIndex >= 0 ? linkNames.names[linkIndex] : Chain.terminalLinkName }
    /// Generation of the chain that decided.
    public internal(set) var chainGeneration: UInt64
    /// The deciding chain's link names and the decider's index (-1: the terminal link), so
    /// deciding stores an index and copies no string.
    var linkNames: LinkNames
    var linkIndex: Int
    var raw: coinmech_decision

    /// Storage to decide into (see `Chain.decide(_:into:)`); rejected as `unrecognized` until then.
    public init() {
        self.init(linkNames: LinkNames([]), linkIndex: -1, chainGeneration: 0, raw: .blank)
    }

    init(linkNames: LinkNames, linkIndex: Int, chainGeneration: UInt64, raw: coinmech_decision) {
        self.linkNames = linkNames
        self.linkIndex = linkIndex
        self.chainGeneration = chainGeneration
        self.raw = raw
    }

    /// A decision the host makes without walking the chain (e.g. `inhibited`).
    public init(rejectedBy linkName: String, chainGeneration: UInt64, reason: String, message: String) {
        self.init(linkNames: LinkNames([linkName]), linkIndex: 0, chainGeneration: chainGeneration,
                  raw: .rejecting(reason: reason, message: message))
    }

    /// Accept or reject. A chain always decides, so there is no `pass` here.
    public var verdict: Verdict {
        switch raw.linkVerdict() {
        case .decided(let verdict): verdict
        case .pass: .reject(Rejection(reason: Chain.terminalLinkName, message: "no link recognised the coin"))
        }
    }

    /// True for an accept; checked without copying strings.
    public var isAccept: Bool { raw.isWellFormedAccept }

    /// The accepted value in minor units, or 0 for a rejection; no strings copied.
    public var acceptedValueMinor: Int64 { raw.isWellFormedAccept ? raw.value_minor : 0 }
}

/// The names of a chain's links, shared by the chain and every decision it makes.
final class LinkNames: Sendable {
    let names: [String]

    init(_ names: [String]) {
        self.names = names
    }
}
