import CoinMechGPIO
import CoinMechHotplug
import CoinMechModel
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
    /// The scale's reading, for mechs with a load cell (nil without one).
    func weigh() -> Double?
}

/// Why an edge input could not be opened.
public struct MechInputError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What turns a GPIO mech's edges into coins: a pulse decoder (channels) or a light-gate
/// decoder (diameters).
public protocol CoinDecoder {
    /// Feeds one edge; returns the coin it completed, if any.
    mutating func decode(_ edge: EdgeEvent) -> DecodedCoin?
    /// The coin in progress, if it is complete at `now` (on the edges' clock).
    mutating func decode(now: UInt64) -> DecodedCoin?
    /// When the coin in progress completes without further edges (edges' clock).
    var deadline: UInt64? { get }
    /// Edges too short to count (bounce, static, dust), since the start.
    var glitches: Int { get }
}

/// A coin a decoder made out of edges, or the reason it cannot be credited.
public struct DecodedCoin: Sendable, Hashable {
    public var measurement: Measurement
    /// A reason code when the coin must be returned without walking the chain.
    public var rejection: String?
    /// When the coin was complete, on the edges' clock (the kernel's timestamps): its deadline
    /// runs from here, not from when the loop got round to it.
    public var completedAt: UInt64
}

extension PulseDecoder: CoinDecoder {
    public mutating func decode(_ edge: EdgeEvent) -> DecodedCoin? { feed(edge).map(Self.coin) }
    public mutating func decode(now: UInt64) -> DecodedCoin? { poll(now: now).map(Self.coin) }

    static func coin(_ coin: PulseCoin) -> DecodedCoin {
        DecodedCoin(measurement: Measurement(diameterMM: nil, weightG: nil, thicknessMM: nil, channel: coin.channel),
                    rejection: coin.suspectMerged ? "merged_train" : nil, completedAt: coin.completedNanoseconds)
    }
}

extension LightGateDecoder: CoinDecoder {
    public mutating func decode(_ edge: EdgeEvent) -> DecodedCoin? {
        feed(edge).map {
            DecodedCoin(measurement: Measurement(diameterMM: $0.diameterMM, weightG: nil, thicknessMM: nil, channel: nil),
                        completedAt: $0.measuredNanoseconds)
        }
    }
    public mutating func decode(now: UInt64) -> DecodedCoin? { nil }
    public var deadline: UInt64? { nil }
}

/// A GPIO mech: a pulse mech (N pulses are channel N) or a light-gate mech (diameter from two
/// gates). Edges from an `EdgeInput` go through a `CoinDecoder`; each coin becomes a reading
/// whose device sequence number the host assigns, continuing from the ledger's last one (these
/// mechs do not number coins).
public final class GPIOMech: Mech {
    private let input: any EdgeInput
    private var decoder: any CoinDecoder
    private var lastSeq: UInt64
    private var connected = false
    private var nextAttempt: UInt64 = 0
    private var lastError: String?
    private var inhibited = false

    public init(input: any EdgeInput, decoder: any CoinDecoder, lastDeviceSeq: UInt64?) {
        self.input = input
        self.decoder = decoder
        lastSeq = lastDeviceSeq ?? 0
    }

    public var location: String { input.location }
    public var descriptor: Int32? { connected ? input.descriptor : nil }
    public var isConnected: Bool { connected }
    public var disconnectedReason: String? { connected ? nil : lastError }
    public var frameErrors: FrameErrorCounts { FrameErrorCounts() }
    /// Edges too short to count (bounce, static, dust), since the start.
    public var glitches: Int { decoder.glitches }

    public var nextWake: Instant? {
        guard connected else { return Instant(nanoseconds: nextAttempt) }
        return [input.nextWake, decoder.deadline.map { input.wallTime(stream: $0) }].compactMap { $0 }.min().map(Instant.init(nanoseconds:))
    }

    /// A GPIO line acts the moment the answer is given.
    public var lineTiming: LineTiming? { nil }

    public func poll(now instant: Instant) -> [MechEvent] {
        let now = instant.nanoseconds
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
        if let coin = decoder.decode(now: input.streamTime(now: now)) { events.append(reading(coin, now: now)) }
        return events
    }

    public func readEvents(now instant: Instant, hungUp: Bool) -> [MechEvent] {
        guard connected else { return [] }
        if hungUp { return disconnect(reason: "the GPIO line went away", now: instant) }
        return decode(input.edges(now: instant.nanoseconds), now: instant.nanoseconds)
    }

    private func decode(_ edges: [EdgeEvent], now: UInt64) -> [MechEvent] {
        edges.compactMap { decoder.decode($0) }.map { reading($0, now: now) }
    }

    private func reading(_ coin: DecodedCoin, now: UInt64) -> MechEvent {
        lastSeq += 1
        var measurement = coin.measurement
        // A light-gate coin lands on the scale: weigh it (mechs without a scale say nil).
        if measurement.diameterMM != nil, measurement.weightG == nil { measurement.weightG = input.weigh() }
        // Sent when the kernel saw it complete (never later than now: a clock step is not a coin
        // from the future).
        let sentAt = min(input.wallTime(stream: coin.completedAt), now)
        return .reading(MechReading(deviceSeq: lastSeq, measurement: measurement, sentAt: Instant(nanoseconds: sentAt), rejection: coin.rejection))
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

    public func hotplug(_ change: HotplugTracker.Change, now instant: Instant) -> [MechEvent] {
        let now = instant.nanoseconds
        switch change {
        case .vanished:
            return disconnect(reason: "GPIO chip removed", now: instant)
        case .appeared:
            nextAttempt = now
            return poll(now: instant)
        }
    }

    public func disconnect(reason: String, now: Instant) -> [MechEvent] {
        guard connected else { return [] }
        input.setInhibit(true)
        input.close()
        connected = false
        nextAttempt = now.nanoseconds + 1_000_000_000
        return [.lost(path: input.location, reason: reason)]
    }
}
