/// What an `MDBChangerHost` asks its driver to do: write a line to the adapter, or take note.
public enum MDBChangerHostOutput: Sendable, Hashable {
    /// Write this line to the adapter now.
    case send(MDBAdapterCommand)
    case event(MDBChangerHostEvent)
}

/// What happened, typed for the daemon (ledger entries, status, logs).
public enum MDBChangerHostEvent: Sendable, Hashable, CustomStringConvertible {
    /// The changer is set up and polled: what it said of itself (identity at level 3 only),
    /// and its tubes (nil if their reply could not be read).
    case ready(MDBChangerSetup, MDBChangerIdentity?, MDBTubeStatus?)
    /// A coin went in. `valueMinor` is the changer's own value for its type (nil for a type
    /// it gives no value, or a token). Money when `routing.isKept`: the changer has already
    /// kept it, and a POLL is not repeated, so record it at once.
    case deposited(type: Int, routing: MDBChangerEvent.Routing, valueMinor: Int64?, tubeCount: Int)
    /// Coins paid by the changer's own buttons.
    case dispensedManually(type: Int, count: Int, valueMinor: Int64?, tubeCount: Int)
    case slugs(count: Int)
    /// A status from a POLL; "changer was reset" is followed by setting it up again.
    case status(MDBChangerStatus)
    case unknownStatus(UInt8)
    /// The tubes as the changer last counted them.
    case tubes(MDBTubeStatus)
    /// A DISPENSE is over: the tubes counted once the changer stopped paying.
    case dispensed(MDBDispense)
    /// An alternative payout (level 3) is over: the tubes counted once the changer stopped paying.
    case paidValue(MDBValuePayout)
    /// The changer takes these coin types now (0: none, inhibited).
    case accepting(UInt16)
    /// What the changer takes is unknown until it is set up again (a reset, an outage): it
    /// may be taking coins, which the host reports when it next polls.
    case acceptanceUnknown
    /// No usable answer for `nonResponseNanoseconds` (`failures` lines): the changer or the
    /// adapter is gone. Reported once per outage; the host sets it up again from the start.
    case notResponding(failures: Int)
    case responding
    /// A reply that could not be read; the line it answered counts as unanswered.
    case adapterError(MDBAdapterError)
    /// A reply no line was waiting for, or not the answer its line needs (its line is tried again).
    case unexpectedReply(String)
    /// A POLL got no reply: whatever the changer reported in it is lost (MDB's POLL is not
    /// repeated). Recorded for the audit; tube counts show the coins that went to a tube.
    case pollReplyLost
    /// A changer reply MDB does not allow; a POLL's events in it are lost.
    case replyError(MDBReplyError)

    public var description: String {
        switch self {
        case .ready(let setup, let identity, _):
            "ready: level \(setup.level), code \(String(setup.countryCode, radix: 16)), scaling \(setup.scalingFactor)"
                + (identity.map { ", \($0.manufacturer) \($0.model)" } ?? "")
        case .deposited(let type, let routing, let value, let count):
            "deposited: type \(type) \(value.map { "(\($0))" } ?? "(no value)") to \(routing), \(count) in its tube"
        case .dispensedManually(let type, let count, _, let left): "dispensed by hand: \(count) of type \(type), \(left) left"
        case .slugs(let count): "\(count) slugs"
        case .status(let status): "status: \(status)"
        case .unknownStatus(let byte): "unknown status \(byte)"
        case .tubes(let tubes): "tubes: \(tubes.counts)"
        case .dispensed(let dispense): dispense.description
        case .paidValue(let payout): payout.description
        case .accepting(let mask): "accepting coin types \(String(mask, radix: 16))"
        case .acceptanceUnknown: "what the changer accepts is unknown until a COIN TYPE is answered"
        case .unexpectedReply(let line): "unexpected reply from the MDB adapter: \(line)"
        case .pollReplyLost: "a POLL got no reply: what the changer reported in it is lost"
        case .notResponding(let failures): "changer not responding (\(failures) lines unanswered)"
        case .responding: "changer responding again"
        case .adapterError(let error): error.description
        case .replyError(let error): error.description
        }
    }
}
