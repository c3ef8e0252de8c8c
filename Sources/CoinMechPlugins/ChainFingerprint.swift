import CoinMechChain

extension Chain {
    /// What the chain is made of: `name=plugin@version#sha256` per link, in order.
    public var composition: String {
        links.map { "\($0.name)=\($0.origin.plugin)@\($0.origin.version)#\($0.origin.sha256)" }.joined(separator: ",")
    }

    /// SHA-256 of the composition: equal fingerprints, equal code in equal order.
    public var fingerprint: String { SHA256.hex(Array(composition.utf8)) }
}
