import NIOCore

/// What one client may cost the daemon (docs/PROTOCOL.md, "Limits"): a client that does not
/// read, pipelines without end, holds connections or floods the deciding thread is pushed back
/// or cut off with a message, never allowed to grow the daemon or delay the mech's answers.
public struct ClientLimits: Sendable {
    /// Connections served at once; one more is refused with a message and closed. Peers that may
    /// use control commands get `reservedForControl` more, so an operator still gets in.
    public var maximumClients: Int
    public var reservedForControl: Int
    /// A connection that sends no request this long after it opened is closed.
    public var idleTimeout: TimeAmount
    /// A client that leaves its replies unread this long (the socket stays full while requests
    /// wait) is cut off.
    public var stallTimeout: TimeAmount
    /// Bytes of request lines read ahead of the one being answered: past this, the socket is
    /// not read until they are answered (the client's writes then wait in the kernel).
    public var readAheadBytes: Int
    /// Commands that run on the deciding thread or write the ledger (`explain`, and every
    /// control command), for every client together: a burst, then so many a second.
    public var deciderCommandBurst: Int
    public var deciderCommandsPerSecond: Double

    public init(maximumClients: Int = 64, reservedForControl: Int = 8, idleTimeout: TimeAmount = .seconds(60),
                stallTimeout: TimeAmount = .seconds(60), readAheadBytes: Int = 16 * 1024, deciderCommandBurst: Int = 10,
                deciderCommandsPerSecond: Double = 20) {
        self.maximumClients = maximumClients
        self.reservedForControl = reservedForControl
        self.idleTimeout = idleTimeout
        self.stallTimeout = stallTimeout
        self.readAheadBytes = readAheadBytes
        self.deciderCommandBurst = deciderCommandBurst
        self.deciderCommandsPerSecond = deciderCommandsPerSecond
    }
}
