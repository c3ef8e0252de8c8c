/// What the host must remember of one coin acceptor across restarts: where its event counter
/// stood when the host last recorded the buffer. The caller persists it **in the same
/// transaction** as the ledger entries that moved it (`CCTalkLedgerBatch`), so a restart or a
/// power cut can neither credit an event twice nor skip one.
///
/// Stored per device (source name and address) in the ledger; see docs/PROTOCOL.md, part three.
public struct CCTalkCounterState: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The device sessions the host has seen: 0 for the first, one more each time the device
    /// started again (its counter went back to 0) or another device took its place.
    public var epoch: UInt64
    /// The last event recorded in this epoch, counted from the session's start without the
    /// wrap (the device's counter goes 255 → 1; this goes 255 → 256). With `epoch` it names
    /// every event once: the ledger's (epoch, device_seq) of a credit.
    public var eventNumber: UInt64
    /// The buffer's ten result bytes as last recorded, newest first. A buffer that no longer
    /// continues them tells a device that restarted while nobody polled it.
    public var lastResults: [UInt8]
    /// The device's serial number (header 242), when it gave one: another device in its place
    /// starts a new epoch and its buffer is not credited.
    public var serialNumber: UInt32?
    /// The host is about to reset the device (header 1): a counter that moved at all since
    /// is a new session, even one that already holds five events. Stored before the reset
    /// goes out, so a host that restarts meanwhile still knows.
    public var expectsRestart: Bool

    public init(epoch: UInt64, eventNumber: UInt64, lastResults: [UInt8], serialNumber: UInt32?, expectsRestart: Bool = false) {
        self.epoch = epoch
        self.eventNumber = eventNumber
        self.lastResults = lastResults
        self.serialNumber = serialNumber
        self.expectsRestart = expectsRestart
    }

    /// The device's counter for `eventNumber`: 0 before the first event, then 1…255, 1…255, …
    public var counter: UInt8 { Self.counter(for: eventNumber) }

    public static func counter(for number: UInt64) -> UInt8 { number == 0 ? 0 : UInt8((number - 1) % 255 + 1) }

    public var description: String {
        "epoch \(epoch) event \(eventNumber) (counter \(counter))" + (serialNumber.map { " serial \($0)" } ?? "")
            + (expectsRestart ? ", reset under way" : "")
    }
}
