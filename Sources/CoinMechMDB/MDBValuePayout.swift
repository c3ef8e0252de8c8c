/// An alternative payout (level 3, PAYOUT 0Fh 02h) of a value, over: the changer chose the
/// coins. What it paid is its tubes' fall since before the payout, by the changer's own count
/// (the caller knows the count before); `status` is its PAYOUT STATUS, coins per type, which a
/// careful caller checks against that fall.
public struct MDBValuePayout: Sendable, Hashable, CustomStringConvertible {
    /// The value asked, in the changer's scaled units.
    public var scaledValue: Int
    public var tubes: MDBTubeStatus
    /// Its own account of the coins paid per type; nil if it could not be read.
    public var status: MDBPayoutStatus?
    /// The changer reported a tube jam while paying: a short count is a jam.
    public var jammed: Bool
    /// A coin went into a tube, or a manual dispense paid, while it lasted.
    public var disturbed: Bool
    /// The payout outlasted the host's patience: counted while it may still have been paying.
    public var timedOut: Bool
    /// Counted from a new setup's TUBE STATUS (a reset or an outage came between): the `ready`
    /// that follows carries the same read.
    public var countedAtSetup = false

    public init(scaledValue: Int, tubes: MDBTubeStatus, status: MDBPayoutStatus?, jammed: Bool, disturbed: Bool, timedOut: Bool) {
        self.scaledValue = scaledValue
        self.tubes = tubes
        self.status = status
        self.jammed = jammed
        self.disturbed = disturbed
        self.timedOut = timedOut
    }

    public var description: String {
        "PAYOUT of \(scaledValue) scaled unit(s) over: tubes \(tubes.counts.prefix(tubes.reported))"
            + (status.map { ", it says it paid \($0.counts)" } ?? ", its PAYOUT STATUS unread")
            + (jammed ? ", jam reported" : "") + (disturbed ? ", tubes moved by something else meanwhile" : "") + (timedOut ? ", still busy when counted" : "")
    }
}
