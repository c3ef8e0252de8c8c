/// One thing a changer reports in its POLL reply. A reply holds up to 16 bytes of them, mixed
/// and repeated, so every byte is read: field changers send `02 04 07` (payout busy, defective
/// tube sensor, tube jam) in one reply.
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

    /// The events of one POLL reply's data, in order.
    public static func parse(poll bytes: [UInt8]) throws(MDBReplyError) -> [MDBChangerEvent] {
        guard bytes.count <= 16 else { throw .tooLong(reply: "POLL", bytes: bytes.count, maximum: 16) }
        var events: [MDBChangerEvent] = []
        var index = 0
        while index < bytes.count {
            let first = bytes[index]
            if first & 0x80 != 0 || first & 0xC0 == 0x40 {
                guard index + 1 < bytes.count else { throw .truncatedEvent(first) }
                let tubeCount = Int(bytes[index + 1])
                if first & 0x80 != 0 {
                    events.append(.dispensedManually(type: Int(first & 0x0F), count: Int(first >> 4 & 0x07), tubeCount: tubeCount))
                } else {
                    events.append(.deposited(type: Int(first & 0x0F), routing: Routing(rawValue: first >> 4 & 0x03)!, tubeCount: tubeCount))
                }
                index += 2
            } else if first & 0xE0 == 0x20 {
                events.append(.slugs(count: Int(first & 0x1F)))
                index += 1
            } else {
                events.append(MDBChangerStatus(rawValue: first).map(MDBChangerEvent.status) ?? .unknownStatus(first))
                index += 1
            }
        }
        return events
    }
}
