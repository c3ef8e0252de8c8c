/// One dispense of a hopper, over, by the hopper's own account (header 166): the coins it
/// paid and left unpaid, and whether that account can be believed.
public struct CCTalkHopperPayment: Sendable, Hashable {
    /// The hopper's index in the bank.
    public var unit: Int
    public var count: Int
    /// Whether the hopper took the dispense (its event counter moved past the mark).
    public var taken: Bool
    public var paid: Int
    public var unpaid: Int
    /// The account is the hopper's own and adds up: a short payment is explained (empty,
    /// jammed, stopped, power lost, refused).
    public var certain: Bool
    /// Why it paid short, for people.
    public var why: String?

    public init(unit: Int, count: Int, taken: Bool, paid: Int, unpaid: Int, certain: Bool, why: String?) {
        self.unit = unit
        self.count = count
        self.taken = taken
        self.paid = paid
        self.unpaid = unpaid
        self.certain = certain
        self.why = why
    }
}
