import CLinux
import CoinMechGPIO
import Foundation

/// A recorded edge stream played back at its own pace (scaled by `speed`): `gpio-replay`.
/// Lets the whole GPIO pipeline run end to end without hardware. Accept-gate pulses and the
/// inhibit state are counted, as there is no line to drive.
public final class ReplayEdgeInput: EdgeInput {
    public let path: String
    public let speed: Double
    private var edges: [EdgeEvent] = []
    private var next = 0
    private var origin: (recorded: UInt64, replayed: UInt64) = (0, 0)
    public private(set) var acceptGatePulses = 0
    public private(set) var inhibited = false

    public init(path: String, speed: Double = 1) {
        self.path = path
        self.speed = speed
    }

    public var location: String { path }
    public var descriptor: Int32? { nil }
    public var nextWake: UInt64? { next < edges.count ? replayTime(edges[next].timestampNanoseconds) : nil }

    public func open(now: UInt64) throws(MechInputError) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw MechInputError("\(path): cannot read the edge stream") }
        do throws(EdgeStream.ParseError) {
            edges = try EdgeStream.parse(text)
        } catch {
            throw MechInputError("\(path): \(error)")
        }
        next = 0
        // The first edge plays 200 ms from now.
        origin = (edges.first?.timestampNanoseconds ?? 0, now + 200_000_000)
    }

    private func replayTime(_ recorded: UInt64) -> UInt64 {
        origin.replayed + UInt64(Double(recorded - origin.recorded) / speed)
    }

    /// Edges due by `now`, with their recorded timestamps (pulse widths stay as recorded,
    /// whatever the replay speed).
    public func edges(now: UInt64) -> [EdgeEvent] {
        var due: [EdgeEvent] = []
        while next < edges.count, replayTime(edges[next].timestampNanoseconds) <= now {
            due.append(edges[next])
            next += 1
        }
        return due
    }

    public func streamTime(now: UInt64) -> UInt64 {
        now <= origin.replayed ? origin.recorded : origin.recorded + UInt64(Double(now - origin.replayed) * speed)
    }

    public func wallTime(stream: UInt64) -> UInt64 { replayTime(max(stream, origin.recorded)) }

    public func close() { edges = [] }
    public func weigh() -> Double? { nil }
    public func pulseAcceptGate(now: UInt64) { acceptGatePulses += 1 }
    public func setInhibit(_ on: Bool) { inhibited = on }
    public func tick(now: UInt64) {}
}

/// A GPIO mech on real lines through libgpiod: its input lines (a pulse line, or two light
/// gates) gathered on one epoll descriptor, and optional accept-gate and inhibit outputs.
public final class GPIOEdgeInput: EdgeInput {
    public let chipName: String
    public let lines: [UInt32]
    public let acceptGate: (line: UInt32, pulseMilliseconds: Double)?
    public let inhibit: (line: UInt32, activeLow: Bool)?
    /// An HX711 on two lines, for light-gate mechs with a load cell.
    public let scale: (data: UInt32, clock: UInt32, decoder: HX711Decoder)?
    private var chip: GPIOChip?
    private var reader: HX711Reader?
    private var epoll: Int32 = -1
    private var gateReleaseAt: UInt64?

    public init(chip: String, lines: [UInt32], acceptGate: (line: UInt32, pulseMilliseconds: Double)?, inhibit: (line: UInt32, activeLow: Bool)?,
                scale: (data: UInt32, clock: UInt32, decoder: HX711Decoder)? = nil) {
        chipName = chip
        self.lines = lines
        self.acceptGate = acceptGate
        self.inhibit = inhibit
        self.scale = scale
    }

    deinit { close() }

    public var location: String { "\(chipName) lines \(lines.map(String.init).joined(separator: ","))" }
    public var descriptor: Int32? { chip == nil ? nil : epoll }
    public var nextWake: UInt64? { gateReleaseAt }

    public func open(now: UInt64) throws(MechInputError) {
        do throws(GPIOError) {
            let chip = try GPIOChip(chipName)
            let epoll = cm_epoll_create()
            for line in lines { _ = cm_epoll_add_input(epoll, try chip.watch(line)) }
            if let gate = acceptGate { try chip.drive(gate.line, initially: false) }
            // Inhibited until the daemon says otherwise: no coin while nobody decides.
            if let inhibit { try chip.drive(inhibit.line, initially: !inhibit.activeLow) }
            if let scale { reader = try HX711Reader(chip: chip, data: scale.data, clock: scale.clock, decoder: scale.decoder) }
            self.chip = chip
            self.epoll = epoll
        } catch {
            throw MechInputError("\(error)")
        }
    }

    /// Every waiting edge of every input line, in kernel-time order.
    public func edges(now: UInt64) -> [EdgeEvent] {
        guard let chip else { return [] }
        return lines.flatMap { chip.readEdges($0) }.sorted { $0.timestampNanoseconds < $1.timestampNanoseconds }
    }

    /// libgpiod 1.6 stamps events with CLOCK_MONOTONIC, the loop's clock.
    public func streamTime(now: UInt64) -> UInt64 { now }
    public func wallTime(stream: UInt64) -> UInt64 { stream }

    public func weigh() -> Double? { reader?.grams() }

    public func close() {
        reader = nil
        chip = nil
        if epoll >= 0 { Glibc.close(epoll) }
        epoll = -1
    }

    public func pulseAcceptGate(now: UInt64) {
        guard let gate = acceptGate, let chip else { return }
        chip.set(gate.line, true)
        gateReleaseAt = cm_monotonic_ns() + UInt64(gate.pulseMilliseconds * 1e6)
    }

    public func setInhibit(_ on: Bool) {
        guard let inhibit, let chip else { return }
        chip.set(inhibit.line, on != inhibit.activeLow)
    }

    public func tick(now: UInt64) {
        if let release = gateReleaseAt, now >= release, let gate = acceptGate {
            chip?.set(gate.line, false)
            gateReleaseAt = nil
        }
    }
}
