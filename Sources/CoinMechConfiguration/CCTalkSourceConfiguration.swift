import CoinMechCCTalk

extension SourceConfiguration {
    /// A ccTalk coin acceptor on a serial line (`source.kind: cctalk`, docs/CONFIG.md).
    public struct CCTalk: Sendable, Equatable {
        public var device: String
        /// The acceptor's bus address: 2 for a coin acceptor unless it was re-addressed.
        public var address: UInt8 = CCTalkFrame.coinAcceptorAddress
        public var checksum: CCTalkChecksum = .simple
        /// Whether the line gives the host its own bytes back (a single-wire bus does).
        public var echo: CCTalkEchoMode = .auto
        public var baud = 9600
        /// How often the credit buffer (229) is read; the specification's advice is 200 ms.
        public var pollInterval: Duration = .milliseconds(200)
        /// The coin positions the operator allows; the chain narrows them further.
        public var positions: CoinPositionMask = .all

        public init(device: String) {
            self.device = device
        }

        /// What the protocol engine is driven with.
        public var hostConfiguration: CCTalkHostConfiguration {
            var host = CCTalkHostConfiguration()
            host.address = address
            host.checksum = checksum
            host.echo = echo
            host.baud = baud
            host.pollInterval = UInt64(pollInterval.components.seconds) * 1_000_000_000 + UInt64(pollInterval.components.attoseconds / 1_000_000_000)
            return host
        }
    }
}
