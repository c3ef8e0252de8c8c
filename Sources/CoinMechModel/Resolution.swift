/// What became of a pending coin.
public enum Resolution: String, Sendable, Hashable, CaseIterable {
    case credited
    case returned
    case unconfirmed

    public var kind: EventKind {
        switch self {
        case .credited: .coin
        case .returned: .coinReturned
        case .unconfirmed: .coinUnconfirmed
        }
    }
}
