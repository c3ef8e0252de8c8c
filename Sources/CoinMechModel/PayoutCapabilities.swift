/// What a paying device can do: the payout core and the operator's commands act on these, not
/// on which kind of device it is. Its driver declares them.
public struct PayoutCapabilities: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// It counts the coins it holds (a changer's tubes): what a step paid is its count's fall.
    public static let countsItsUnits = PayoutCapabilities(rawValue: 1 << 0)
    /// It cannot count what it holds (a hopper): the ledger keeps each unit's level, moved by
    /// the operator's `refill` and `float` and by what the device says each step paid.
    public static let ledgerKeepsLevels = PayoutCapabilities(rawValue: 1 << 1)
    /// It says who it is (a serial number): a payout left open is settled only by the device
    /// that paid it.
    public static let identifies = PayoutCapabilities(rawValue: 1 << 2)
    /// It pays a value and chooses the coins itself (MDB level 3's alternative payout), and
    /// reports per coin type what it paid.
    public static let paysValue = PayoutCapabilities(rawValue: 1 << 3)

    public var description: String {
        let names: [(PayoutCapabilities, String)] = [(.countsItsUnits, "counts its units"), (.ledgerKeepsLevels, "ledger keeps levels"),
                                                    (.identifies, "identifies"), (.paysValue, "pays a value")]
        let present = names.filter { contains($0.0) }.map(\.1)
        return present.isEmpty ? "none" : present.joined(separator: ", ")
    }
}
