/// A changer's DISPENSE, over, as the payout journal needs it: the tubes it counted once it
/// stopped paying, and what says whether a short fall is to be believed.
public struct DispenseCount: Sendable, Hashable {
    public var type: Int
    public var count: Int
    /// Coins per coin type, as counted.
    public var tubes: [Int]
    /// A jam was reported while paying: a short fall is a jam, and the tube is out.
    public var jammed: Bool
    /// Something else moved the tubes meanwhile (a deposit, a manual dispense), or the
    /// changer was still busy when counted: the fall is not the whole story, so nothing more
    /// is paid on it.
    public var uncertain: Bool
    /// A hopper's own account of the coins it paid and left unpaid (header 166); nil for a
    /// changer, whose tube fall tells. The ledger's inventory moves by it.
    public var devicePaid: Int?
    public var deviceUnpaid: Int?
    /// A changer's own account of the coins a value step paid, per coin type (MDB's PAYOUT
    /// STATUS); nil for a DISPENSE, or where it could not be read. Checked against the fall.
    public var deviceCounts: [Int]?

    public init(type: Int, count: Int, tubes: [Int], jammed: Bool, uncertain: Bool, devicePaid: Int? = nil, deviceUnpaid: Int? = nil, deviceCounts: [Int]? = nil) {
        self.type = type
        self.count = count
        self.tubes = tubes
        self.jammed = jammed
        self.uncertain = uncertain
        self.devicePaid = devicePaid
        self.deviceUnpaid = deviceUnpaid
        self.deviceCounts = deviceCounts
    }
}
