/// One thing a changer reports in its POLL reply (`MDBPollReply`).
public enum MDBChangerEvent: Sendable, Hashable {
    /// `01yyxxxx zzzzzzzz`: a coin of type `type` accepted and routed; `tubeCount` coins of its
    /// type are now in its tube.
    case deposited(type: Int, routing: Routing, tubeCount: Int)
    /// `1yyyxxxx zzzzzzzz`: `count` coins of `type` paid by the changer's own buttons.
    case dispensedManually(type: Int, count: Int, tubeCount: Int)
    /// `001xxxxx`: slugs seen since the last poll.
    case slugs(count: Int)
    case status(MDBChangerStatus)
    /// A status byte MDB does not define (`0000xxxx` above 0Dh), kept so it can be logged.
    case unknownStatus(UInt8)

    /// Where a deposited coin went.
    public enum Routing: UInt8, Sendable, Hashable {
        case cashBox = 0
        case tube = 1
        /// `10`: MDB leaves it unused.
        case unused = 2
        case reject = 3

        /// Whether the coin stayed in the changer (it is money in).
        public var isKept: Bool { self == .cashBox || self == .tube }
    }
}
