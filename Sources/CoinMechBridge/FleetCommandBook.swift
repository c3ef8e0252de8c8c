import CoinMechProtocol

/// Which fleet commands run, in what order, and what each one's reply is (B11–B15), with no
/// I/O: the bridge hands it every message on `cmd/+`, runs what it says to run, one at a time,
/// and publishes the replies it makes.
///
/// Each id's reply is remembered until its deadline has passed, and a repeat (QoS 1 may deliver
/// a command twice) is answered with it without running again (B13); a repeat of one still
/// waiting or running is dropped, as its reply is coming.
public struct FleetCommandBook: Sendable {
    public let allow: Set<FleetCommand.Name>
    public let maxAhead: Double
    /// Commands accepted and not yet started, in arrival order (B14).
    public private(set) var waiting: [FleetCommand] = []
    private var running: String?
    /// id → (reply, forget after).
    private var replies: [String: (reply: JSON, until: Double)] = [:]
    private let cabinet: String
    private let site: String

    public init(cabinet: String, site: String, allow: Set<FleetCommand.Name>, maxAhead: Double) {
        self.cabinet = cabinet
        self.site = site
        self.allow = allow
        self.maxAhead = maxAhead
    }

    /// What to do with one message.
    public enum Outcome: Sendable, Equatable {
        /// Queued: it runs when its turn comes.
        case queued
        /// Answered at once (a refusal, or a repeat answered from memory): publish on `reply/<id>`.
        case reply(id: String, JSON)
        /// Not answerable, or a repeat of one whose reply is coming: say it in the log.
        case ignored(String)
    }

    /// A message on `cmd/<name>`.
    public mutating func receive(name: String, payload: [UInt8], retained: Bool, now: Double) -> Outcome {
        forget(now: now)
        // B15: the broker replays a retained message at every subscription; running it would
        // replay an old command.
        if retained { return .ignored("a retained command on cmd/\(name): ignored (commands are never retained)") }
        guard let message = JSON.parse(String(decoding: payload, as: UTF8.self)), let fields = message.object else {
            return .ignored("cmd/\(name) is not a JSON object: it has no id to answer, so it is dropped")
        }
        guard let id = fields["id"]?.string, FleetCommand.isID(id) else {
            return .ignored("cmd/\(name) has no valid id (1 to 64 of A-Z a-z 0-9 _ -): it cannot be answered, so it is dropped")
        }
        let by = fields["by"]?.string
        if let known = replies[id] { return .reply(id: id, known.reply) }
        if running == id || waiting.contains(where: { $0.id == id }) { return .ignored("cmd/\(name) id \(id) again while it waits or runs: its reply is coming") }
        func refuse(_ code: String, _ message: String, until: Double) -> Outcome {
            let reply = self.reply(id: id, name: name, by: by, .failure(.init(code, message)), now: now)
            replies[id] = (reply, until)
            return .reply(id: id, reply)
        }
        // A refusal without a usable deadline is remembered for the longest a deadline may be.
        let unknownUntil = now + maxAhead
        guard fields["v"]?.int == 1 else { return refuse("bad_request", "v must be 1 (this bridge speaks contract v1)", until: unknownUntil) }
        guard let deadline = fields["deadline"]?.double else {
            return refuse("bad_request", "deadline is required: seconds since 1970 after which the command must not start", until: unknownUntil)
        }
        guard deadline <= now + maxAhead else {
            // A deadline far enough ahead (1e22) is past Int: converting it stopped the bridge on
            // one command (coinmech-fuzz-fleet bridge). Whole seconds when they fit.
            let ahead = (deadline - now).rounded()
            return refuse("bad_request", "deadline \(deadline) is \(Int(exactly: ahead).map(String.init) ?? "\(ahead)") s ahead of the cabinet's clock, more than \(Int(maxAhead)) s: check the fleet's and the cabinet's clocks", until: unknownUntil)
        }
        let args = fields["args"]?.object ?? [:]
        if let given = fields["args"], given != .null, given.object == nil {
            return refuse("bad_request", "args must be an object", until: deadline)
        }
        // The name, then the allow-list, then the arguments (B11): a command not allowed is
        // `not_allowed` whatever its arguments.
        if let known = FleetCommand.Name(rawValue: name), !allow.contains(known) {
            return refuse("not_allowed", "\(name) is not in this bridge's commands.allow (\(allow.sorted().map(\.rawValue).joined(separator: ", ")))", until: deadline)
        }
        let named: (FleetCommand.Name, FleetCommand.Action)
        switch FleetCommand.action(name, args) {
        case .failure(let failure): return refuse(failure.code, failure.message, until: deadline)
        case .success(let found): named = found
        }
        if let expired = expired(deadline, now: now) { return refuse("expired", expired, until: deadline) }
        waiting.append(FleetCommand(id: id, name: named.0, action: named.1, deadline: deadline, by: by))
        return .queued
    }

    /// The next command to run, if none runs. One whose deadline passed while it waited is
    /// answered `expired` instead (B12): `.reply`.
    public mutating func next(now: Double) -> Next? {
        guard running == nil, !waiting.isEmpty else { return nil }
        let command = waiting.removeFirst()
        if let expired = expired(command.deadline, now: now) {
            let reply = self.reply(id: command.id, name: command.name.rawValue, by: command.by, .failure(.init("expired", expired)), now: now)
            replies[command.id] = (reply, command.deadline)
            return .reply(id: command.id, reply)
        }
        running = command.id
        return .run(command)
    }

    public enum Next: Sendable, Equatable {
        case run(FleetCommand)
        case reply(id: String, JSON)
    }

    /// The running command ended: its reply, to publish, remembered for repeats.
    public mutating func finish(_ command: FleetCommand, _ result: Result<JSON, FleetCommand.Failure>, now: Double) -> JSON {
        let reply = self.reply(id: command.id, name: command.name.rawValue, by: command.by, result, now: now)
        replies[command.id] = (reply, max(command.deadline, now))
        if running == command.id { running = nil }
        return reply
    }

    public var isIdle: Bool { running == nil && waiting.isEmpty }

    private func expired(_ deadline: Double, now: Double) -> String? {
        guard now > deadline else { return nil }
        let late = ((now - deadline) * 10).rounded() / 10
        return "deadline \(deadline) passed \(late) s before the command could start: not run"
    }

    private mutating func forget(now: Double) {
        replies = replies.filter { $0.value.until >= now }
    }

    private func reply(id: String, name: String, by: String?, _ result: Result<JSON, FleetCommand.Failure>, now: Double) -> JSON {
        var reply: [String: JSON] = ["v": 1, "cabinet": .string(cabinet), "site": .string(site), "id": .string(id), "cmd": .string(name),
                                     "time": .double((now * 10).rounded() / 10)]
        switch result {
        case .success(let value):
            reply["ok"] = true
            reply["result"] = value
        case .failure(let failure):
            reply["ok"] = false
            reply["error"] = ["code": .string(failure.code), "message": .string(failure.message)]
        }
        if let by { reply["by"] = .string(by) }
        return .object(reply)
    }
}
