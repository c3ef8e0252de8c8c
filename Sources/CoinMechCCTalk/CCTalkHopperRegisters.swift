/// A payout hopper's fault and status registers (header 163, "Test hopper"), the flags a host
/// acts on named; the rest are kept as bytes for status. Bit numbers are the specification's
/// (part 2, header 163).
public struct CCTalkHopperRegisters: Sendable, Hashable, CustomStringConvertible {
    /// Registers 1 to 3 as read (a hopper may send fewer; missing ones are 0).
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) {
        self.bytes = Array((bytes + [0, 0, 0]).prefix(3))
    }

    private func bit(_ register: Int, _ bit: Int) -> Bool { bytes[register - 1] & (1 << bit) != 0 }

    /// Register 1 bit 0: payout stopped on a current limit (a jam the hopper could not clear).
    public var maximumCurrentExceeded: Bool { bit(1, 0) }
    /// Register 1 bit 1: a payout ended with no coin seen for a while: most likely empty.
    public var payoutTimeout: Bool { bit(1, 1) }
    /// Register 1 bit 3, bit 4, bit 5; register 2 bit 0, bit 3: the exit sensors saw fraud or a
    /// blockage.
    public var optoFault: Bool { bit(1, 3) || bit(1, 4) || bit(1, 5) || bit(2, 0) || bit(2, 3) }
    /// Register 1 bit 6: powered up since the last reset.
    public var powerUpDetected: Bool { bit(1, 6) }
    /// Register 1 bit 7: payout disabled (after every power-up and reset, until enabled).
    public var payoutDisabled: Bool { bit(1, 7) }
    /// Register 2 bit 4: the motor reversed too often: a permanent jam.
    public var motorReverseLimit: Bool { bit(2, 4) }
    /// Register 2 bit 6: its memory of paid and unpaid coins may be wrong.
    public var memoryChecksumError: Bool { bit(2, 6) }
    /// Register 3 bit 0: power was lost during a payout; the paid and unpaid counts tell what
    /// happened before it. Cleared by a reset.
    public var powerDownDuringPayout: Bool { bit(3, 0) }
    /// Register 3 bit 4: it wants an encrypted dispense, which this host does not send.
    public var encryptionEnabled: Bool { bit(3, 4) }

    /// Flags that stop payouts until a software reset clears them.
    public var needsReset: Bool {
        maximumCurrentExceeded || optoFault || motorReverseLimit || powerDownDuringPayout || bit(3, 1) || bit(3, 2) || bit(3, 3)
    }

    /// The hopper stopped short on a jam it reports.
    public var jammed: Bool { maximumCurrentExceeded || motorReverseLimit || bit(1, 5) }

    public var description: String {
        var flags: [String] = []
        if maximumCurrentExceeded { flags.append("maximum current exceeded") }
        if payoutTimeout { flags.append("payout timeout (empty?)") }
        if optoFault { flags.append("exit sensor fault") }
        if powerUpDetected { flags.append("power-up") }
        if payoutDisabled { flags.append("payout disabled") }
        if motorReverseLimit { flags.append("motor reverse limit") }
        if memoryChecksumError { flags.append("memory checksum error") }
        if powerDownDuringPayout { flags.append("power down during payout") }
        if encryptionEnabled { flags.append("encryption enabled") }
        return flags.isEmpty ? "ok" : flags.joined(separator: ", ")
    }
}
