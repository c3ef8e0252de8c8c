/// What a coin acceptor says about itself when the host identifies it.
public struct CCTalkDeviceIdentity: Sendable, Hashable, CustomStringConvertible {
    public var address: UInt8
    /// Header 245: `Coin Acceptor` for the devices CoinMech drives.
    public var category: String?
    public var manufacturer: String?
    public var productCode: String?
    public var serialNumber: UInt32?
    public var softwareRevision: String?
    /// Header 4: the revision of the specification it follows (release, major, minor).
    public var commsRevision: [UInt8]?
    /// Header 249: how often it asks to be polled.
    public var pollingPriority: PollingPriority?
    /// Header 184, for every position that holds a coin (positions reading `......` are left out).
    public var coinIDs: [Int: CoinID] = [:]

    public init(address: UInt8) { self.address = address }

    /// The positions that hold a coin.
    public var populated: CoinPositionMask { CoinPositionMask(positions: coinIDs.keys) }

    /// The category names a coin acceptor (case and blanks aside).
    public var isCoinAcceptor: Bool {
        category.map { $0.lowercased().split(separator: " ").joined(separator: " ") == "coin acceptor" } ?? false
    }

    public var description: String {
        var parts = ["address \(address)", category ?? "category unknown"]
        if let manufacturer { parts.append(manufacturer) }
        if let productCode { parts.append(productCode) }
        if let serialNumber { parts.append("serial \(serialNumber)") }
        if let softwareRevision { parts.append("software \(softwareRevision)") }
        parts.append("coins " + coinIDs.keys.sorted().map { "\($0)=\(coinIDs[$0]!)" }.joined(separator: " "))
        return parts.joined(separator: ", ")
    }
}
