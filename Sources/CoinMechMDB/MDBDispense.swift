/// A DISPENSE of `count` coins of `type`, over: the tubes the changer counted once it stopped
/// paying. What it paid is its tube's fall since before the DISPENSE, by the changer's own
/// account (the caller knows the count before), unless something else moved the tube.
public struct MDBDispense: Sendable, Hashable, CustomStringConvertible {
    public var type: Int
    public var count: Int
    public var tubes: MDBTubeStatus
    /// The changer reported a tube jam or a coin jam while paying: a short count is a jam.
    public var jammed: Bool
    /// A coin went into a tube, or a manual dispense paid, while it lasted.
    public var disturbed: Bool
    /// "Payout busy" outlasted the host's patience: counted while it may still have been paying.
    public var timedOut: Bool
    /// Counted from a new setup's TUBE STATUS (a reset or an outage came between): the `ready`
    /// that follows carries the same read.
    public var countedAtSetup = false

    public init(type: Int, count: Int, tubes: MDBTubeStatus, jammed: Bool, disturbed: Bool, timedOut: Bool) {
        self.type = type
        self.count = count
        self.tubes = tubes
        self.jammed = jammed
        self.disturbed = disturbed
        self.timedOut = timedOut
    }

    public var description: String {
        "DISPENSE of \(count) coin(s) of type \(type) over: \(tubes.counts[type]) left in its tube"
            + (jammed ? ", jam reported" : "") + (disturbed ? ", tubes moved by something else meanwhile" : "") + (timedOut ? ", still busy when counted" : "")
    }
}
