/// The coins of each type a level-3 changer paid in its last alternative payout, in reply to
/// PAYOUT STATUS (0Fh 03h): one count byte per type, unsent types 0.
public struct MDBPayoutStatus: Sendable, Hashable {
    public var counts: [Int]

    public init(reply bytes: [UInt8]) throws(MDBReplyError) {
        guard bytes.count <= 16 else { throw .tooLong(reply: "PAYOUT STATUS", bytes: bytes.count, maximum: 16) }
        counts = bytes.map(Int.init) + Array(repeating: 0, count: 16 - bytes.count)
    }

    /// What was paid, in the currency's smallest unit, by the changer's own coin values.
    public func valueMinor(_ setup: MDBChangerSetup) -> Int64 {
        counts.enumerated().reduce(0) { total, entry in total + Int64(entry.element) * (setup.valueMinor(ofType: entry.offset) ?? 0) }
    }
}
