/// Whether the host reads its own bytes back: on the usual single-wire ccTalk bus it does.
public enum CCTalkEchoMode: String, Sendable, Hashable, CaseIterable {
    /// Expect the echo until it fails to come, and again whenever it shows up.
    case auto
    /// Always expect it; a missing echo is a line error.
    case on
    /// Never expect it (separate receive and transmit lines).
    case off
}

/// How a host drives one coin acceptor. Times are nanoseconds.
public struct CCTalkHostConfiguration: Sendable, Hashable {
    /// The acceptor's address (2 for a coin acceptor) and the host's own (1).
    public var address: UInt8 = CCTalkFrame.coinAcceptorAddress
    public var hostAddress: UInt8 = CCTalkFrame.hostAddress
    public var checksum: CCTalkChecksum = .simple
    public var echo: CCTalkEchoMode = .auto
    /// Line speed: a request's own bytes take their time before the reply can start.
    public var baud = 9600
    /// The specification's advice: poll the credit buffer every 200 ms, and never stop (an
    /// acceptor not polled for about a second inhibits itself).
    public var pollInterval: UInt64 = 200_000_000
    /// How long to wait for a reply once the request has left.
    public var replyTimeout: UInt64 = 100_000_000
    /// Further attempts after a reply that did not come (or was a NAK, for the buffer poll).
    public var retries = 2
    /// Wait after a BUSY before asking again, and how many BUSYs in a row are given up on.
    public var busyDelay: UInt64 = 20_000_000
    public var busyLimit = 10
    /// Silence that resets the receiver mid-frame.
    public var interByteTimeout: UInt64 = CCTalkParser.defaultInterByteTimeout
    /// Transactions in a row without an answer after which the device is reported as not
    /// responding (once per outage).
    public var unresponsiveAfter = 3
    /// How often to read back the inhibit registers and put them right if the device lost them.
    public var verifyInterval: UInt64 = 5_000_000_000
    /// How often to repeat the self-check while the device reports a fault.
    public var faultCheckInterval: UInt64 = 1_000_000_000
    /// The positions the daemon allows at the start (`allow` changes them).
    public var allowed: CoinPositionMask = .all
    /// The coin ids the chain credits at the start (nil: any populated position may open).
    public var creditableCoinIDs: Set<String>?
    /// Other devices on the same bus the host's driver talks to through `ask` (payout
    /// hoppers): their frames are the line's, not garbage.
    public var otherAddresses: Set<UInt8> = []

    public init() {}

    /// The time `count` bytes take on an 8N1 line at `baud`.
    public func transit(bytes count: Int) -> UInt64 {
        UInt64(count) * 10 * 1_000_000_000 / UInt64(max(baud, 1))
    }
}
