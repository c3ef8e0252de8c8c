import CoinMechBridge
import CoinMechFleet
import CoinMechProtocol

/// The fleet's MQTT payloads, as fuzz targets: what the broker hands the bridge on `cmd/<name>`
/// and the fleet on each cabinet's topics. A stolen cabinet credential or a broken broker can put
/// any bytes there. Each takes any bytes, must not crash, hang or leak on them, and checks what
/// its reader promises. Apart from `FuzzTarget` because the bridge and the fleet bring SwiftNIO
/// and PostgresNIO: `coinmech-fuzz-fleet` is its own binary, built outside CI.
public enum FleetFuzzTarget: String, CaseIterable, Sendable {
    /// `FleetCommandBook.receive`: a command from the fleet, on `cmd/<name>`.
    case bridge
    /// `FleetMessage.read`: a cabinet's event, state, status, totals or reply, as the fleet reads it.
    case fleet

    @discardableResult
    public func run(_ bytes: UnsafeRawBufferPointer) -> Bool {
        switch self {
        case .bridge: Self.bridge(bytes)
        case .fleet: Self.fleet(bytes)
        }
    }

    @discardableResult
    public func run(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { run($0) } }

    /// A fixed clock: deadlines in the seeds are read against it.
    static let now = 1_800_000_000.0

    /// The first byte picks the command's name (the five of v1 and one unknown) and whether the
    /// message is retained; the rest is the payload. Queued, answered or ignored, never a crash;
    /// the same message again is answered with the same reply, or ignored while its reply is
    /// coming (QoS 1 delivers twice: B13); a queued command runs next.
    static func bridge(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let first = bytes.first else { return false }
        let names = ["status", "totals", "inhibit", "reload", "resend", "fly"]
        let name = names[Int(first & 0x7F) % names.count]
        let retained = first & 0x80 != 0
        let payload = Array(bytes.dropFirst())
        var book = FleetCommandBook(cabinet: "c-0042", site: "test-site", allow: Set(FleetCommand.Name.allCases), maxAhead: 600)
        let outcome = book.receive(name: name, payload: payload, retained: retained, now: now)
        let again = book.receive(name: name, payload: payload, retained: retained, now: now)
        switch outcome {
        case .reply(let id, let reply):
            precondition(again == outcome, "a repeated command was answered otherwise: \(again)")
            precondition(reply["id"]?.string == id && reply["ok"]?.bool != nil && reply["v"]?.int == 1, "a reply without id, ok or v: \(reply)")
            // One JSON line, which reads back as what it reads back as (numbers are normalised
            // when read: a whole 1800000000.0 reads as an integer).
            let read = JSON.parse(reply.description)
            precondition(read != nil && !reply.description.contains("\n") && JSON.parse(read!.description) == read, "a reply does not read back as itself")
        case .queued:
            if case .ignored = again {} else { preconditionFailure("a repeat of a waiting command was not ignored: \(again)") }
            guard case .run(let command)? = book.next(now: now) else { preconditionFailure("a queued command does not run next") }
            precondition(FleetCommand.isID(command.id) && command.name.rawValue == name, "the command run is not the one queued")
            let reply = book.finish(command, .success(["done": true]), now: now)
            precondition(book.receive(name: name, payload: payload, retained: retained, now: now) == .reply(id: command.id, reply),
                         "a finished command's repeat is not answered with its reply")
            return true
        case .ignored(let why):
            precondition(!why.isEmpty, "ignored without saying why")
        }
        return false
    }

    /// The first byte picks the topic's last level (event, state, status, totals, a reply, or
    /// another) and whether the topic's cabinet is the one the payloads name; the rest is the
    /// payload. Read, refused with a reason or not a cabinet's; what is read keeps its promises.
    static func fleet(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let first = bytes.first else { return false }
        let names = ["event", "state", "status", "totals", "reply/r-1", "ack"]
        let name = names[Int(first & 0x7F) % names.count]
        let cabinet = first & 0x80 == 0 ? "c-0042" : "c-0043"
        let topic = "coinmech/v1/test-site/\(cabinet)/\(name)"
        let message: FleetMessage?
        do throws(FleetMessage.Refusal) {
            message = try FleetMessage.read(topic: topic, payload: Array(bytes.dropFirst()), prefix: "coinmech/v1/")
        } catch {
            precondition(!error.reason.isEmpty && error.topic == topic, "a refusal without its reason or topic")
            return false
        }
        guard let message else { return false }
        precondition(message.cabinet == cabinet, "a message of another cabinet than its topic's")
        switch message {
        case .event(let event):
            precondition(name == "event" && event.seq >= 1 && !event.kind.isEmpty, "an event without its seq or kind")
            precondition(JSON.parse(event.json)?["event"]?["seq"]?.int == event.seq, "an event whose seq is not its event's")
        case .reply(let reply):
            precondition(name.hasPrefix("reply/") && reply.missing.allSatisfy { $0.lowerBound >= 1 }, "a reply with a bad range")
        case .state(let state):
            precondition(state.heartbeat.map { $0 > 0 && $0.isFinite } ?? true, "a heartbeat that is not a positive number")
        case .status, .totals:
            break
        }
        return true
    }
}
