/// A changer's POLL reply read event by event. A reply holds up to 16 bytes of events, mixed
/// and repeated, so every byte is read: field changers send `02 04 07` (payout busy, defective
/// tube sensor, tube jam) in one reply. A POLL is not repeated, so a reply with a fault keeps
/// every event read before it: a deposit is money the changer has already kept.
public struct MDBPollReply: Sendable, Hashable {
    public var events: [MDBChangerEvent]
    /// What was wrong with the reply, if anything: it ended inside a two-byte event, or was
    /// longer than MDB allows (its events are read all the same).
    public var problem: MDBReplyError?

    public static let maximumLength = 16

    public init(data bytes: [UInt8]) {
        events = []
        problem = bytes.count > Self.maximumLength ? .tooLong(reply: "POLL", bytes: bytes.count, maximum: Self.maximumLength) : nil
        var index = 0
        while index < bytes.count {
            let first = bytes[index]
            if first & 0x80 != 0 || first & 0xC0 == 0x40 {
                guard index + 1 < bytes.count else {
                    problem = .truncatedEvent(first)
                    return
                }
                let tubeCount = Int(bytes[index + 1])
                if first & 0x80 != 0 {
                    events.append(.dispensedManually(type: Int(first & 0x0F), count: Int(first >> 4 & 0x07), tubeCount: tubeCount))
                } else {
                    events.append(.deposited(type: Int(first & 0x0F), routing: MDBChangerEvent.Routing(rawValue: first >> 4 & 0x03)!, tubeCount: tubeCount))
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
    }
}
