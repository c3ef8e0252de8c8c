import CGPIOD

#if canImport(Glibc)
import Glibc
#endif

/// Why a GPIO chip or line could not be used.
public enum GPIOError: Error, Sendable, Equatable, CustomStringConvertible {
    case chipNotFound(String, errno: Int32)
    case lineUnavailable(chip: String, offset: UInt32, errno: Int32)
    case request(chip: String, offset: UInt32, errno: Int32)

    public var description: String {
        switch self {
        case .chipNotFound(let chip, let code): "GPIO chip '\(chip)' not found: \(String(cString: strerror(code)))"
        case .lineUnavailable(let chip, let offset, let code): "\(chip) line \(offset): \(String(cString: strerror(code)))"
        case .request(let chip, let offset, let code): "\(chip) line \(offset): cannot request it (in use?): \(String(cString: strerror(code)))"
        }
    }
}

/// A GPIO chip through libgpiod 1.6: input lines with edge events (kernel timestamps) and
/// output lines (the accept gate, the inhibit line). The thin seam between the hardware and
/// the pure decoders; owned by one thread.
public final class GPIOChip {
    public let name: String
    private let chip: OpaquePointer
    private var inputs: [UInt32: OpaquePointer] = [:]
    private var outputs: [UInt32: OpaquePointer] = [:]

    /// Opens a chip by label, name (`gpiochip0`), number or path (`gpiod_chip_open_lookup`).
    public init(_ name: String) throws(GPIOError) {
        guard let chip = gpiod_chip_open_lookup(name) else { throw .chipNotFound(name, errno: errno) }
        self.name = name
        self.chip = chip
    }

    deinit {
        // Closing the chip releases every line requested from it.
        gpiod_chip_close(chip)
    }

    /// Requests `offset` as an input reporting both edges; returns its event descriptor for `poll`.
    public func watch(_ offset: UInt32, consumer: String = "coinmechd") throws(GPIOError) -> Int32 {
        guard let line = gpiod_chip_get_line(chip, offset) else { throw .lineUnavailable(chip: name, offset: offset, errno: errno) }
        guard gpiod_line_request_both_edges_events(line, consumer) == 0 else { throw .request(chip: name, offset: offset, errno: errno) }
        inputs[offset] = line
        return gpiod_line_event_get_fd(line)
    }

    /// The edges waiting on a watched line, with the kernel's timestamps.
    public func readEdges(_ offset: UInt32) -> [EdgeEvent] {
        guard let line = inputs[offset] else { return [] }
        var edges: [EdgeEvent] = []
        var event = gpiod_line_event()
        var zero = timespec()
        while gpiod_line_event_wait(line, &zero) == 1, gpiod_line_event_read(line, &event) == 0 {
            let time = UInt64(event.ts.tv_sec) * 1_000_000_000 + UInt64(event.ts.tv_nsec)
            edges.append(EdgeEvent(timestampNanoseconds: time, line: offset, rising: event.event_type == GPIOD_LINE_EVENT_RISING_EDGE))
        }
        return edges
    }

    /// Requests `offset` as an output, starting at `value`.
    public func drive(_ offset: UInt32, initially value: Bool, consumer: String = "coinmechd") throws(GPIOError) {
        guard let line = gpiod_chip_get_line(chip, offset) else { throw .lineUnavailable(chip: name, offset: offset, errno: errno) }
        guard gpiod_line_request_output(line, consumer, value ? 1 : 0) == 0 else { throw .request(chip: name, offset: offset, errno: errno) }
        outputs[offset] = line
    }

    /// Requests `offset` as a plain input (read with `get`).
    public func read(_ offset: UInt32, consumer: String = "coinmechd") throws(GPIOError) {
        guard let line = gpiod_chip_get_line(chip, offset) else { throw .lineUnavailable(chip: name, offset: offset, errno: errno) }
        guard gpiod_line_request_input(line, consumer) == 0 else { throw .request(chip: name, offset: offset, errno: errno) }
        outputs[offset] = line
    }

    /// The value of a requested line, or nil.
    public func get(_ offset: UInt32) -> Bool? {
        guard let line = outputs[offset] ?? inputs[offset] else { return nil }
        let value = gpiod_line_get_value(line)
        return value < 0 ? nil : value == 1
    }

    /// Sets an output line; false if it is not ours or the write failed.
    @discardableResult
    public func set(_ offset: UInt32, _ value: Bool) -> Bool {
        guard let line = outputs[offset] else { return false }
        return gpiod_line_set_value(line, value ? 1 : 0) == 0
    }
}
