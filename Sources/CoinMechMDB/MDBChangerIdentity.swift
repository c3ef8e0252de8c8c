/// Who a level-3 changer is, in reply to EXPANSION IDENTIFICATION (0Fh 00h): 33 bytes.
public struct MDBChangerIdentity: Sendable, Hashable {
    /// Three ASCII letters, e.g. "MEI".
    public var manufacturer: String
    public var serialNumber: String
    public var model: String
    /// Two bytes of BCD, e.g. 0x0102 for 1.02.
    public var softwareVersion: UInt16
    public var features: Features

    /// The optional features a level-3 changer may offer and the host may switch on.
    public struct Features: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// PAYOUT, PAYOUT STATUS and PAYOUT VALUE POLL (0Fh 02h–04h).
        public static let alternativePayout = Features(rawValue: 1 << 0)
        /// SEND DIAGNOSTIC STATUS (0Fh 05h).
        public static let extendedDiagnostics = Features(rawValue: 1 << 1)
        public static let controlledManualFillAndPayout = Features(rawValue: 1 << 2)
        public static let fileTransportLayer = Features(rawValue: 1 << 3)
    }

    public static let length = 33

    public init(reply bytes: [UInt8]) throws(MDBReplyError) {
        guard bytes.count >= Self.length else { throw .tooShort(reply: "IDENTIFICATION", bytes: bytes.count, needed: Self.length) }
        func text(_ range: Range<Int>) -> String {
            String(decoding: bytes[range].map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
                .trimmingTrailingSpaces()
        }
        manufacturer = text(0..<3)
        serialNumber = text(3..<15)
        model = text(15..<27)
        softwareVersion = UInt16(bytes[27]) << 8 | UInt16(bytes[28])
        features = Features(rawValue: UInt32(bytes[29]) << 24 | UInt32(bytes[30]) << 16 | UInt32(bytes[31]) << 8 | UInt32(bytes[32]))
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
