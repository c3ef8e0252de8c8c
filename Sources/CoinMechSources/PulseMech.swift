import CoinMechGPIO
import CoinMechHotplug
import CoinMechSerial

/// Where a pulse mech's edges come from: the GPIO line itself, or a recorded stream.
public protocol EdgeInput: AnyObject {
    var location: String { get }
    /// Poll this for edges (live lines); nil for timer-driven inputs.
    var descriptor: Int32? { get }
    /// When the next recorded edge is due (replays).
    var nextWake: UInt64? { get }
    func open(now: UInt64) throws(MechInputError)
    /// Edges available at `now` (from the descriptor, or due in the recording).
    func edges(now: UInt64) -> [EdgeEvent]
    func close()
    /// Pulses the accept gate output, if there is one.
    func pulseAcceptGate(now: UInt64)
    /// Sets the inhibit output, if there is one.
    func setInhibit(_ on: Bool)
    /// Timer work of the outputs (ending a gate pulse).
    func tick(now: UInt64)
    /// The edges' clock at `now` (the kernel's for live lines; the recording's for replays).
    func streamTime(now: UInt64) -> UInt64
    /// `now` for a time on the edges' clock.
    func wallTime(stream: UInt64) -> UInt64
}

/// Why an edge input could not be opened.
public struct MechInputError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A pulse mech: N pulses are channel N. Edges from an `EdgeInput` go through a
/// `PulseDecoder`; each finished train becomes a reading whose device sequence number the
/// host assigns, continuing from the ledger's last one (a pulse mech does not number coins).
public final class PulseMech: Mech {
    private let input: any EdgeInput
    private var decoder: PulseDecoder
    private var lastSeq: UInt64
    private var connected = false
    private var nextAttempt: UInt64 = 0
    private var lastError: String?
    private var inhibited = false

    public init(input: any EdgeInput, settings: PulseDecoder.Settings, lastDeviceSeq: UInt64?) {
        self.input = input
        decoder = PulseDecoder(settings: settings)
        lastSeq = lastDeviceSeq ?? 0
    }

    public var location: String { input.location }
    public var descriptor: Int32? { connected ? input.descriptor : nil }
    public var isConnected: Bool { connected }
    public var disconnectedReason: String? { connected ? nil : lastError }
    public var frameErrors: FrameErrorCounts { FrameErrorCounts() }
    /// Pulses too short to count (bounce, static), since the start.
    public var glitches: Int { decoder.glitches }

    public var nextWake: UInt64? {
        guard connected else { return nextAttempt }
        return [input.nextWake, decoder.deadline.map { input.wallTime(stream: $0) }].compactMap { $0 }.min()
    }

    public func poll(now: UInt64) -> [MechEvent] {
        var events: [MechEvent] = []
        if !connected {
            guard now >= nextAttempt else { return [] }
            do throws(MechInputError) {
                try input.open(now: now)
                connected = true
                lastError = nil
                input.setInhibit(inhibited)
                events.append(.connected(path: input.location))
            } catch {
                lastError = error.message
                nextAttempt = now + 1_000_000_000
                return []
            }
        }
        input.tick(now: now)
        if input.descriptor == nil { events += decode(input.edges(now: now), now: now) }
        if let coin = decoder.poll(now: input.streamTime(now: now)) { events.append(reading(coin, now: now)) }
        return events
    }

    public func readEvents(now: UInt64, hungUp: Bool) -> [MechEvent] {
        guard connected else { return [] }
        if hungUp { return disconnect(reason: "the GPIO line went away", now: now) }
        return decode(input.edges(now: now), now: now)
    }

    private func decode(_ edges: [EdgeEvent], now: UInt64) -> [MechEvent] {
        edges.compactMap { decoder.feed($0) }.map { reading($0, now: now) }
    }

    private func reading(_ coin: PulseCoin, now: UInt64) -> MechEvent {
        lastSeq += 1
        let measurement = Measurement(diameterMM: nil, weightG: nil, thicknessMM: nil, channel: coin.channel)
        return .reading(deviceSeq: lastSeq, measurement: measurement, receivedAt: now, rejection: coin.suspectMerged ? "merged_train" : nil)
    }

    @discardableResult
    public func answer(deviceSeq: UInt64, accept: Bool) -> Bool {
        guard connected else { return false }
        if accept { input.pulseAcceptGate(now: 0) }
        return true
    }

    public func setInhibit(_ on: Bool) {
        inhibited = on
        if connected { input.setInhibit(on) }
    }

    public func hotplug(_ change: HotplugTracker.Change, now: UInt64) -> [MechEvent] {
        switch change {
        case .vanished:
            return disconnect(reason: "GPIO chip removed", now: now)
        case .appeared:
            nextAttempt = now
            return poll(now: now)
        }
    }

    public func disconnect(reason: String, now: UInt64) -> [MechEvent] {
        guard connected else { return [] }
        input.setInhibit(true)
        input.close()
        connected = false
        nextAttempt = now + 1_000_000_000
        return [.lost(path: input.location, reason: reason)]
    }
}
