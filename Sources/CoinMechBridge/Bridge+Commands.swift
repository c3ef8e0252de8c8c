import CoinMechMQTT
import CoinMechClient
import CoinMechProtocol

/// The fleet's commands (B11–B15): taken from `cmd/+`, run one at a time on a daemon connection
/// of their own (the bridge's socket permissions), answered on `reply/<id>`. `FleetCommandBook`
/// decides; this is its I/O. A daemon command blocks the loop until the daemon answers (at most
/// `commands.answer_timeout_s`); libmosquitto's own thread keeps the broker's link meanwhile.
extension Bridge {
    struct Commands {
        var book: FleetCommandBook
        var connection: CoinMechConnection?
        var job: ResendJob?
        /// Replies sent, by command and outcome; copies `resend` published.
        var answered: [BridgeFigures.Pair: Int] = [:]
        var resendCopies = 0
        /// Copies the running resend has awaiting PUBACK: they share `max_inflight` with events.
        var inFlight: Int { job?.inFlightCount ?? 0 }
    }

    func makeCommands() -> Commands {
        let c = configuration
        return Commands(book: FleetCommandBook(cabinet: c.cabinet, site: c.site, allow: c.commands.allow, maxAhead: c.commands.maxAheadSeconds))
    }

    /// A message on `cmd/<name>`.
    func received(command topic: String, _ payload: [UInt8], retained: Bool, _ commands: inout Commands, _ link: MQTTLink, now: Double) {
        let name = String(topic.dropFirst(configuration.topic("cmd/").count))
        switch commands.book.receive(name: name, payload: payload, retained: retained, now: now) {
        case .queued:
            break
        case .reply(let id, let reply):
            answer(id, reply, link, &commands)
        case .ignored(let why):
            // B15: said and counted, never run.
            commands.answered[BridgeFigures.Pair(name, "ignored"), default: 0] += 1
            log(.warning, why)
        }
    }

    /// One step of the fleet's commands: the running resend goes on, or the next command starts.
    func runCommands(_ commands: inout Commands, liveInFlight: Int, _ link: MQTTLink, now: Double) {
        if commands.job != nil {
            resendStep(&commands, liveInFlight: liveInFlight, link, now: now)
            return
        }
        switch commands.book.next(now: now) {
        case nil:
            return
        case .reply(let id, let reply):
            log(.warning, "command \(id) waited past its deadline: refused, not run")
            answer(id, reply, link, &commands)
        case .run(let command):
            log(.notice, "command \(command.name.rawValue) (id \(command.id)\(command.by.map { ", by \($0)" } ?? ""))")
            let request: OperatorCommand
            switch command.action {
            case .resend(let from, let to):
                commands.job = ResendJob(command, from: from, to: to)
                resendStep(&commands, liveInFlight: liveInFlight, link, now: now)
                return
            case .status: request = .status
            case .totals: request = .totals
            case .inhibit(let on): request = .inhibit(on)
            case .reload: request = .reload
            }
            let result = ask(request, &commands)
            let reply = commands.book.finish(command, result, now: Self.now())
            answer(command.id, reply, link, &commands)
        }
    }

    /// The running resend: publish what room allows, read the next page, reply once done.
    private func resendStep(_ commands: inout Commands, liveInFlight: Int, _ link: MQTTLink, now: Double) {
        guard var job = commands.job else { return }
        commands.job = nil
        while liveInFlight + job.inFlightCount < configuration.mqtt.maxInflight {
            if let (seq, event) = job.nextToSend() {
                guard let mid = link.publish(configuration.topic("event"), eventPayload(seq, event)) else {
                    // The link just dropped: this copy and the rest go after the reconnect.
                    job.putBack(seq, event)
                    job.brokerLost()
                    break
                }
                job.sent(seq, mid: mid)
                commands.resendCopies += 1
                continue
            }
            guard let page = job.wantsPage else { break }
            switch ask(.events(since: page.since, limit: page.limit), &commands) {
            case .success(let result):
                job.took(page: result["events"]?.array ?? [], limit: page.limit)
            case .failure(let failure):
                log(.warning, "resend \(job.command.id): \(failure.message)")
                let partial = FleetCommand.Failure(failure.code, "\(failure.message); \(job.resent) seqs from \(job.from) on were resent before it")
                let reply = commands.book.finish(job.command, .failure(partial), now: now)
                answer(job.command.id, reply, link, &commands)
                return
            }
        }
        guard job.isDone else {
            commands.job = job
            return
        }
        let result: Result<JSON, FleetCommand.Failure>
        if let to = job.to, to < job.from {
            result = .failure(.init("bad_request", "the daemon's ledger holds no event from seq \(job.from) on: nothing to resend"))
        } else {
            result = .success(job.result)
            log(.notice, "resend \(job.command.id): \(job.result)")
        }
        let reply = commands.book.finish(job.command, result, now: now)
        answer(job.command.id, reply, link, &commands)
    }

    /// The daemon's answer to `request` on the commands' own connection, or the failure the
    /// reply names (B12, and the error codes of docs/FLEET.md).
    private func ask(_ request: OperatorCommand, _ commands: inout Commands) -> Result<JSON, FleetCommand.Failure> {
        let path = configuration.socketPath
        let connection: CoinMechConnection
        if let open = commands.connection {
            connection = open
        } else {
            do throws(ClientError) {
                connection = try CoinMechConnection(path: path)
            } catch {
                return .failure(.init("unavailable", "cannot reach the daemon: \(error)"))
            }
            commands.connection = connection
        }
        do throws(ClientError) {
            return .success(try connection.request(request, timeout: configuration.commands.answerTimeoutSeconds))
        } catch {
            switch error {
            case .server(let code, let message):
                return .failure(.init(code, message))
            case .timeout:
                commands.connection = nil
                return .failure(.init("timeout", "the daemon did not answer within \(Int(configuration.commands.answerTimeoutSeconds)) s: the command may have run"))
            default:
                commands.connection = nil
                return .failure(.init("unavailable", "the daemon's connection ended before it answered (\(error)): the command may have run"))
            }
        }
    }

    private func answer(_ id: String, _ reply: JSON, _ link: MQTTLink, _ commands: inout Commands) {
        commands.answered[BridgeFigures.Pair(reply["cmd"]?.string ?? "?", reply["ok"] == true ? "ok" : reply["error"]?["code"]?.string ?? "?"), default: 0] += 1
        if link.publish(configuration.topic("reply/\(id)"), reply.description) == nil {
            log(.warning, "the reply to command \(id) could not be handed to the broker (the link is down): the fleet will ask again")
        }
    }
}
