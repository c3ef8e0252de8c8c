import CoinMechModel

/// What a subscription sends between replies: an event, or word that the subscriber fell behind
/// and must subscribe again from `resumeFrom` to lose nothing.
public enum SubscriptionMessage: DaemonMessage {
    case event(LedgerEvent)
    case overflow(resumeFrom: Int64)

    /// Reads one message; throws when it is neither, or lacks what it must carry.
    public init(json: JSON) throws(ReplyError) {
        switch json["type"]?.string {
        case "event":
            guard let event = json["event"] else { throw ReplyError("an event message has no \"event\"") }
            self = .event(try LedgerEvent(json: event))
        case "overflow":
            self = .overflow(resumeFrom: try ReplyFields(json, "overflow").int("resume_from"))
        default:
            throw ReplyError("a subscription message that is neither an event nor an overflow: \(json)")
        }
    }

    public var json: JSON {
        switch self {
        case .event(let event): ClientProtocol.event(event)
        case .overflow(let resumeFrom): ClientProtocol.overflow(resumeFrom: resumeFrom)
        }
    }
}
