import CoinMechModel
import CoinMechMQTT
import CoinMechProtocol
import CoinMechSupport
import Foundation
import Logging

/// The fleet's ingest (docs/FLEET.md, F1–F9): every cabinet's `event`, `state`, `status`,
/// `totals` and `reply` from one persistent MQTT session; events into PostgreSQL in batches, one
/// transaction each; after each commit the cabinet's ack (F6); holes asked for again with
/// `cmd/resend` (F8); alerts reconciled every `alerts.check_s`.
///
/// libmosquitto PUBACKs a message before the fleet sees it, so PUBACK promises nothing here:
/// what a crash loses between the PUBACK and the commit is never acked, and the bridge sends it
/// again (B7) or the gap check asks for it (F8).
public final class FleetIngest: Sendable {
    let configuration: FleetConfiguration
    let store: FleetStore
    let logger: Logger
    public let outbox: CommandOutbox
    public let figures: FleetFigures
    /// Beaten at every turn of the loop and every answer of a database call.
    public let watchdog: FleetWatchdog

    public init(configuration: FleetConfiguration, store: FleetStore, logger: Logger, outbox: CommandOutbox, figures: FleetFigures, watchdog: FleetWatchdog) {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        self.outbox = outbox
        self.figures = figures
        self.watchdog = watchdog
    }

    static func now() -> Double { Date().timeIntervalSince1970 }

    /// Until the task is cancelled (the service group's shutdown).
    public func run() async throws {
        let c = configuration
        // The database first: nothing is taken from the broker before the store can hold it.
        var sequences: [String: (site: String, sequence: CabinetSequence)] = [:]
        var hearing = CabinetHearing()
        var wait = 0.5
        while !Task.isCancelled {
            watchdog.beat()
            do {
                let applied = try await store.migrate()
                if !applied.isEmpty { logger.info("database schema: applied step(s) \(applied.map(String.init).joined(separator: ", "))") }
                sequences = try await store.loadSequences(sites: c.mqtt.sites, now: Self.now())
                hearing = try await store.loadHearing(instance: c.instance)
                break
            } catch {
                logger.error("database \(describe(c.database)) not ready (\(String(reflecting: error))): trying again in \(wait) s")
                try? await Task.sleep(for: .seconds(wait))
                wait = min(wait * 2, 30)
            }
        }
        guard !Task.isCancelled else { return }
        let loaded = sequences.mapValues(\.sequence.contiguous)
        figures.update {
            $0.databaseUp = true
            $0.contiguous = loaded
        }
        logger.info("database \(describe(c.database)): \(sequences.count) cabinet(s) known")

        let password = try c.mqtt.passwordFile.map { file throws(FleetError) in
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw .mqtt("cannot read mqtt.password_file \(file)") }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let p = c.mqtt.prefix
        if c.mqtt.tls == nil { logger.warning("\(MQTTTLS.plaintextWarning)") }
        let link: MQTTLink
        do {
            link = try MQTTLink(.init(clientID: c.mqtt.clientID, host: c.mqtt.host, port: c.mqtt.port, keepalive: c.mqtt.keepaliveSeconds,
                                      maxInflight: c.mqtt.maxInflight, username: c.mqtt.username, password: password, will: nil,
                                      subscriptions: c.subscriptions,
                                      tls: c.mqtt.tls, cleanSession: false, maxPayload: c.ingest.maxMessageBytes, inboxBytes: FleetLimits.inboxBytes))
        } catch { throw FleetError.mqtt(error.message) }
        link.start()
        defer { link.stop() }
        watchdog.ready("\(sequences.count) cabinet(s) known; connecting to the broker \(c.mqtt.host):\(c.mqtt.port)")

        var pacer = AckPacer()
        /// Cabinets with a seq stored beyond a hole: the only ones the gap check looks at.
        var holed = Set(sequences.filter { $0.value.sequence.firstHole != nil }.keys)
        /// The resends this run asked for, by id: a reply's `missing` is believed only inside
        /// the range that was asked.
        var resends: [String: (cabinet: String, range: ClosedRange<Int64>)] = [:]
        /// The operators' commands this run sent, by id, until their deadline has long passed:
        /// a reply is believed only for a command sent.
        var sent: [String: (cabinet: String, until: Double)] = [:]
        /// Events waiting for the database: each writer's, one queue per cabinet, batched in turn.
        var lanes = WriterLanes(count: c.ingest.writers)
        /// The writers' batches, committed and waiting to be applied by this loop.
        let committed = Mailbox<Written>()
        /// What each cabinet had refused, for `/metrics` and its `refused_messages` alert.
        var refusals = CabinetRefusals()
        var refusalLog = LogRateLimit()
        /// What the cabinets said of themselves (state, status, totals), the latest of each,
        /// written at most once a second per cabinet and kind: a cabinet repeating itself cannot
        /// make the ingest write for it more than that.
        var said: [String: FleetMessage] = [:]
        var written: [String: Double] = [:]
        /// Replies already taken, until their command's deadline has long passed: a copy
        /// (QoS 1 may bring one) is no forgery.
        var replied: [String: Double] = [:]
        var nextAlerts = 0.0
        var alertsInFlight = false
        /// The wait of a turn that found nothing to do while a batch is in flight, in ms.
        var idleStep = 1
        let alertsChecked = Mailbox<AlertCheck>()
        /// What a check is to save, kept until one succeeds (the latest of each cabinet).
        var hearingBacklog: [String: CabinetHearing.Heard] = [:]
        var refusalBacklog: [String: String] = [:]
        /// The cabinets whose ack was held when the check in flight started.
        var frozenBefore: Set<String> = []
        /// Contiguous seqs the database holds lower than this loop: a range declared missing
        /// while a cabinet's batch was in flight, which that batch's upsert did not know of.
        var behind: [String: Int64] = [:]

        /// A message refused: counted for its cabinet, logged within a rate, never stored.
        func refuse(_ refusal: FleetMessage.Refusal) {
            refusals.refused(refusal, now: Self.now())
            figures.update {
                $0.refused += 1
                $0.refusedByKind[refusal.kind.rawValue, default: 0] += 1
            }
            let (pass, dropped) = refusalLog.admit(now: Instant.now.nanoseconds)
            if pass { logger.warning("refused: \(refusal)\(dropped > 0 ? " (and \(dropped) more not logged)" : "")") }
        }

        /// A writer's batch committed (`write`): its seqs are stored into the cabinets' sequences
        /// as they stand now (a resend asked or a range declared missing meanwhile stays), the
        /// acks follow, and the writer may start its next batch.
        func apply(_ written: Written) {
            let now = Self.now()
            for (event, reason) in written.setAside {
                refuse(.init(topic: "\(p)\(event.site)/\(event.cabinet)/event", cabinet: event.cabinet, kind: .database,
                             reason: "seq \(event.seq) set aside, the database refuses it (\(reason)): its ack stops below it"))
            }
            for (copy, heldAt) in written.conflicts {
                // Held where the ack was before the batch that brought the copy (F5).
                sequences[copy.cabinet, default: (copy.site, CabinetSequence(now: now))].sequence.freeze(at: heldAt)
                // A check in flight may have read no open conflict for it (an operator's
                // acknowledgement just before this copy): it must not let this hold go.
                frozenBefore.remove(copy.cabinet)
                logger.error("cabinet \(copy.cabinet): seq \(copy.seq) arrived unlike the stored event (kind \(copy.kind)): its ledger was replaced; its ack is held (F5)")
            }
            Self.store(written.stored, into: &sequences, now: now)
            let touched = Set(written.stored.map(\.cabinet))
            var contiguous: [String: Int64] = [:]
            for cabinet in touched {
                guard let entry = sequences[cabinet] else { continue }
                if entry.sequence.firstHole != nil { holed.insert(cabinet) } else { holed.remove(cabinet) }
                pacer.committed(cabinet: cabinet, site: entry.site, seq: entry.sequence.ackSeq)
                contiguous[cabinet] = entry.sequence.contiguous
                if entry.sequence.contiguous > written.contiguous[cabinet] ?? 0 { behind[cabinet] = entry.sequence.contiguous }
            }
            figures.update {
                $0.eventsStored += written.inserted
                $0.duplicates += written.duplicates
                $0.batches += written.transactions
                $0.conflicts += written.conflicts.count
                $0.commitSeconds = written.took
                $0.lastLagSeconds = written.lag
                $0.contiguous.merge(contiguous) { $1 }
            }
            lanes.finished(written.lane)
        }

        /// An alert check's outcome: the acks of cabinets with an open `ledger_conflict` held,
        /// those an operator acknowledged moving again. Only a cabinet held before the check
        /// started is let go: one that a batch held meanwhile is not in what the check read.
        func applyAlerts(_ check: AlertCheck) {
            alertsInFlight = false
            guard let frozen = check.frozen else {
                figures.update { $0.databaseUp = false }
                logger.error("alerts not checked: the database failed (\(check.failure ?? "?"))")
                return
            }
            hearingBacklog = [:]
            refusalBacklog = [:]
            for cabinet in frozen where sequences[cabinet] != nil && sequences[cabinet]!.sequence.frozenAt == nil {
                sequences[cabinet]!.sequence.freeze(at: sequences[cabinet]!.sequence.ackSeq)
            }
            for cabinet in frozenBefore where !frozen.contains(cabinet) && sequences[cabinet]?.sequence.frozenAt != nil {
                // An operator acknowledged the conflict: the ack moves again.
                sequences[cabinet]!.sequence.thaw()
                pacer.committed(cabinet: cabinet, site: sequences[cabinet]!.site, seq: sequences[cabinet]!.sequence.ackSeq)
            }
            figures.update { $0.databaseUp = true }
        }

        /// A write of a message's own (state, status, totals, reply): retried while the
        /// database is away; refused for its data, logged and counted.
        func save(_ what: String, _ body: @Sendable () async throws -> Void) async throws {
            do {
                try await retrying(what, body)
            } catch let refused as FleetStore.Refused {
                figures.update {
                    $0.refused += 1
                    $0.refusedByKind[FleetMessage.Refusal.Kind.database.rawValue, default: 0] += 1
                }
                logger.error("\(what) set aside, the database refuses it: \(refused)")
            }
        }

        // The writers' batches are its child tasks: a stop waits for those in flight, and one
        // that a stop found retrying ends with the stop (nothing it had is acked, F6).
        do {
            try await withThrowingDiscardingTaskGroup { group in
                while !Task.isCancelled {
                    watchdog.beat()
                    for written in committed.take() { apply(written) }
                    for (cabinet, seq) in behind {
                        try await save("contiguous seq of \(cabinet)") { try await self.store.raiseContiguous(cabinet: cabinet, to: seq) }
                    }
                    behind.removeAll()
                    for check in alertsChecked.take() { applyAlerts(check) }
                    // Taken only while the queues have room: a database that is away fills them, then
                    // the inbox, and then the link stops reading from the broker, which keeps the rest
                    // of the persistent session.
                    let incoming = lanes.bytes < FleetLimits.queueBytes ? link.takeArrivals() : []
                    // Silence is judged as of this take: what came after is not read yet (a loop held
                    // up by the database knows no less).
                    let (takenWall, taken) = (Self.now(), Instant.now)
                    /// Messages read per cabinet in this take: beyond its queue's share, the rest are
                    /// shed unread (reading them is the cost a flood would put on everyone).
                    var read: [String: Int] = [:]
                    var messages = 0
                    for (item, arrived) in incoming {
                        // When it arrived, on both clocks: the loop may take it long after.
                        let moment = CabinetHearing.Moment(wall: takenWall - CabinetHearing.seconds(from: arrived, to: taken), monotonic: arrived)
                        switch item {
                        case .connected(let code, let generation):
                            if code == 0 {
                                link.admit(generation)
                                hearing.connected(at: arrived)
                                figures.update { $0.brokerConnected = true; $0.brokerConnects += 1 }
                                logger.info("connected to the broker \(c.mqtt.host):\(c.mqtt.port) (persistent session \(c.mqtt.clientID))")
                                // A broker that lost its retained acks (crash point 8) hears them again.
                                for (cabinet, entry) in sequences { pacer.committed(cabinet: cabinet, site: entry.site, seq: entry.sequence.ackSeq) }
                            } else {
                                logger.error("the broker \(c.mqtt.host):\(c.mqtt.port) refused the connection (\(MQTTLink.refusal(code))): check mqtt.username, the password or certificate, and the ACLs; trying again")
                            }
                        case .disconnected:
                            hearing.disconnected(at: arrived)
                            figures.update { $0.brokerConnected = false }
                            logger.warning("lost the broker \(c.mqtt.host):\(c.mqtt.port); reconnecting")
                        case .connectFailed(let reason):
                            logger.warning("cannot reach the broker \(c.mqtt.host):\(c.mqtt.port): \(reason); trying again")
                        case .published:
                            break
                        case .reading(let on):
                            figures.update { $0.inboxReading = on }
                            if on {
                                logger.notice("the inbox has room again: reading from the broker")
                            } else {
                                logger.warning("the inbox is full (\(FleetLimits.inboxBytes >> 20) MB not yet taken, the database is slow or away): not reading from the broker, which holds the rest of the session")
                            }
                        case .oversized(let topic, let bytes):
                            messages += 1
                            refuse(.init(topic: topic, cabinet: FleetMessage.cabinet(in: topic, prefix: p), kind: .tooLarge,
                                         reason: "\(bytes) bytes, more than ingest.max_message_bytes (\(c.ingest.maxMessageBytes)): dropped unread"))
                        case .message(let topic, let payload, let retained):
                            messages += 1
                            let cabinet = FleetMessage.cabinet(in: topic, prefix: p)
                            if let cabinet {
                                read[cabinet, default: 0] += 1
                                guard read[cabinet]! <= FleetLimits.cabinetQueue else {
                                    refuse(.init(topic: topic, cabinet: cabinet, kind: .flood, reason: "more than \(FleetLimits.cabinetQueue) messages at once: dropped unread (unacked, its bridge sends them again)"))
                                    continue
                                }
                            }
                            let message: FleetMessage?
                            do throws(FleetMessage.Refusal) {
                                message = try FleetMessage.read(topic: topic, payload: payload, prefix: p, maxBytes: c.ingest.maxMessageBytes)
                            } catch {
                                refuse(error)
                                continue
                            }
                            if let message { hearing.heard(message.cabinet, retained: retained, at: moment) }
                            switch message {
                            case .event(let event)?:
                                let now = Self.now()
                                let contiguous = sequences[event.cabinet]?.sequence.contiguous ?? 0
                                guard event.seq <= contiguous + FleetLimits.maxAhead else {
                                    // Not held: the seqs held above a hole stay bounded. The hole below it is
                                    // asked for (a bridge ahead of a database restored from a backup).
                                    refuse(.init(topic: topic, cabinet: event.cabinet, kind: .ahead,
                                                 reason: "seq \(event.seq) is more than \(FleetLimits.maxAhead) above the contiguous seq \(contiguous): not taken; the seqs below it are asked for"))
                                    sequences[event.cabinet, default: (event.site, CabinetSequence(now: now))].sequence.heard(beyond: event.seq, now: now)
                                    holed.insert(event.cabinet)
                                    continue
                                }
                                if !lanes.append(event) {
                                    refuse(.init(topic: topic, cabinet: event.cabinet, kind: .flood,
                                                 reason: "seq \(event.seq) shed: its queue holds \(FleetLimits.cabinetQueue) events or 2 MB waiting for the database (unacked, its bridge sends it again)"))
                                }
                            case .state(var state)?:
                                // The last will carries no time: the state began when it was received.
                                state.time = state.time ?? moment.wall
                                said["state/\(state.cabinet)"] = .state(state)
                                sequences[state.cabinet]?.site = state.site
                                hearing.promised(state.cabinet, heartbeat: state.heartbeat, at: moment)
                                if state.online, !retained {
                                    // F6: the bridge may have reconnected after a broker restart lost the retained ack.
                                    pacer.now(cabinet: state.cabinet, site: state.site, seq: sequences[state.cabinet]?.sequence.ackSeq ?? 0)
                                }
                            case .status(let cabinet, _, _)?:
                                said["status/\(cabinet)"] = message
                            case .totals(let cabinet, _, _)?:
                                said["totals/\(cabinet)"] = message
                            case .reply(let reply)?:
                                // Believed only for a command this fleet sent that cabinet.
                                let asked = resends[reply.id]
                                if replied[reply.id] != nil { continue }
                                guard asked?.cabinet == reply.cabinet || sent[reply.id]?.cabinet == reply.cabinet else {
                                    refuse(.init(topic: topic, cabinet: reply.cabinet, kind: .forgedReply,
                                                 reason: "a reply to command \(LogText.quoted(reply.id, limit: 64)), which this fleet did not send it (or whose reply came already)"))
                                    continue
                                }
                                resends[reply.id] = nil
                                sent[reply.id] = nil
                                replied[reply.id] = Self.now() + c.ingest.resendDeadlineSeconds + 60
                                try await save("reply \(reply.id)") { try await self.store.recordReply(reply) }
                                guard reply.command == "resend", let asked else { break }
                                // Only inside the range asked for: a bridge's slip cannot settle events it never looked at.
                                let missing = reply.missing.compactMap { range -> ClosedRange<Int64>? in
                                    let lower = max(range.lowerBound, asked.range.lowerBound), upper = min(range.upperBound, asked.range.upperBound)
                                    return lower <= upper ? lower...upper : nil
                                }
                                if reply.missing.contains(where: { $0.lowerBound < asked.range.lowerBound || $0.upperBound > asked.range.upperBound }) {
                                    refuse(.init(topic: topic, cabinet: reply.cabinet, kind: .forgedReply,
                                                 reason: "reply \(LogText.quoted(reply.id, limit: 64)) declares missing seqs outside \(asked.range.lowerBound)…\(asked.range.upperBound), the range asked for: those are ignored"))
                                }
                                guard reply.ok, !missing.isEmpty else { break }
                                var entry = sequences[reply.cabinet] ?? (reply.site, CabinetSequence())
                                for range in missing { entry.sequence.declareMissing(range, now: Self.now()) }
                                let settled = entry
                                try await save("missing events of \(reply.cabinet)") {
                                    try await self.store.recordMissing(cabinet: reply.cabinet, site: reply.site, missing, sequence: settled.sequence, now: Self.now())
                                }
                                sequences[reply.cabinet] = settled
                                if settled.sequence.firstHole == nil { holed.remove(reply.cabinet) }
                                pacer.committed(cabinet: reply.cabinet, site: settled.site, seq: settled.sequence.ackSeq)
                                logger.error("cabinet \(reply.cabinet): its ledger does not hold \(missing.map { "\($0.lowerBound)…\($0.upperBound)" }.joined(separator: ", ")): recorded as missing, alert raised")
                            case nil:
                                break
                            }
                        }
                    }
                    if messages > 0 { figures.update { $0.messagesTaken += messages } }

                    // What the cabinets said of themselves: the latest, at most once a second each.
                    let saying = Self.now()
                    for (key, message) in said where saying - (written[key] ?? -.infinity) >= 1 {
                        said[key] = nil
                        written[key] = saying
                        switch message {
                        case .state(let state):
                            try await save("state of \(state.cabinet)") { try await self.store.saveState(state, receivedAt: Self.now()) }
                        case .status(let cabinet, let site, let json):
                            try await save("status of \(cabinet)") { try await self.store.saveStatus(cabinet: cabinet, site: site, json: json, now: Self.now()) }
                        case .totals(let cabinet, let site, let json):
                            try await save("totals of \(cabinet)") { try await self.store.saveTotals(cabinet: cabinet, site: site, json: json, now: Self.now()) }
                        case .event, .reply:
                            break
                        }
                    }

                    // Each idle writer's next batch, one event of each of its cabinets in turn; this loop
                    // reads on meanwhile, and acks, resends and alerts are never more than a batch away.
                    var started = false
                    if !Task.isCancelled {
                        for (lane, batch) in lanes.start(max: c.ingest.batchMax) {
                            var base: [String: (site: String, sequence: CabinetSequence)] = [:]
                            for event in batch where base[event.cabinet] == nil { base[event.cabinet] = sequences[event.cabinet] }
                            let from = base
                            group.addTask {
                                committed.post(try await self.write(batch, lane: lane, base: from))
                            }
                            started = true
                        }
                    }

                    let now = Self.now()
                    for ack in pacer.due(now: now, interval: c.ingest.ackIntervalSeconds) {
                        let payload = "{\"v\":1,\"cabinet\":\"\(ack.cabinet)\",\"seq\":\(ack.seq),\"time\":\(now),\"by\":\(jsonString(c.instance))}"
                        if link.publish("\(p)\(ack.site)/\(ack.cabinet)/ack", payload, retain: true) == nil {
                            pacer.unsent(ack)
                        } else {
                            figures.update { $0.acksSent += 1 }
                        }
                    }
                    // Only cabinets with a hole can need a resend.
                    for cabinet in holed {
                        guard let entry = sequences[cabinet] else { continue }
                        var sequence = entry.sequence
                        guard let due = sequence.resendDue(now: now, grace: c.ingest.gapGraceSeconds) else { continue }
                        // No more than the ingest would hold at once above the contiguous seq.
                        let hole = due.lowerBound...min(due.upperBound, due.lowerBound + FleetLimits.maxAhead - 1)
                        // A UUID: unique across runs, and a topic level within B15's 64 characters.
                        let id = "gap-\(UUID().uuidString.lowercased())"
                        let args = "{\"from\":\(hole.lowerBound),\"to\":\(hole.upperBound)}"
                        if publishCommand(link, id: id, cabinet: cabinet, site: entry.site, name: "resend", args: args, now: now) {
                            sequences[cabinet]?.sequence = sequence
                            resends[id] = (cabinet, hole)
                            figures.update { $0.resendsAsked += 1 }
                            logger.warning("cabinet \(cabinet): seq \(hole.lowerBound)…\(hole.upperBound) missing for \(c.ingest.gapGraceSeconds) s or more: asked its bridge to resend (\(id))")
                            try await save("command \(id)") { try await self.store.recordCommand(id: id, cabinet: cabinet, name: "resend", args: args, by: c.instance, now: now) }
                        }
                    }
                    for command in outbox.take() {
                        if publishCommand(link, id: command.id, cabinet: command.cabinet, site: command.site, name: command.name, args: command.args, now: now, by: command.by) {
                            sent[command.id] = (command.cabinet, now + c.ingest.resendDeadlineSeconds + 60)
                            figures.update { $0.commandsSent += 1 }
                            logger.info("cabinet \(command.cabinet): \(command.name) \(command.args) sent for \(command.by) (\(command.id))")
                        } else {
                            logger.error("cabinet \(command.cabinet): \(command.name) for \(command.by) not sent: no broker connection")
                            try await save("reply for \(command.id)") {
                                try await self.store.recordReply(.init(cabinet: command.cabinet, site: command.site, id: command.id, command: command.name, ok: false, missing: [],
                                                                       errorCode: "not_sent", json: "{\"ok\":false,\"error\":{\"code\":\"not_sent\",\"message\":\"the fleet had no broker connection\"}}"))
                            }
                        }
                    }
                    // Alerts, off this loop (at 50,000 cabinets a check holds the database for a
                    // second): one check at a time, from what this loop knows as it starts.
                    if now >= nextAlerts && !alertsInFlight {
                        nextAlerts = now + c.alerts.checkSeconds
                        figures.update {
                            $0.databaseStalls = store.database.stalls
                            $0.databaseStranded = store.database.stranded
                        }
                        sent = sent.filter { $0.value.until > now }
                        replied = replied.filter { $0.value > now }
                        written = written.filter { now - $0.value < 1 }
                        hearingBacklog.merge(hearing.unsaved) { $1 }
                        hearing.saved()
                        for (cabinet, detail) in refusals.unsaved { refusalBacklog[cabinet] = detail }
                        refusals.saved()
                        var holes: [String: (hole: ClosedRange<Int64>?, since: Double?)] = [:]
                        for cabinet in holed { if let sequence = sequences[cabinet]?.sequence { holes[cabinet] = (sequence.firstHole, sequence.holeSince) } }
                        frozenBefore = Set(sequences.lazy.filter { $0.value.sequence.frozenAt != nil }.map(\.key))
                        let check = AlertCheckInput(listened: hearing.listened(at: taken), heard: hearingBacklog, refusals: refusalBacklog.map { ($0.key, $0.value) },
                                                    hearing: hearing, holes: holes, taken: taken, now: now)
                        alertsInFlight = true
                        group.addTask { alertsChecked.post(await self.checkAlerts(check)) }
                    }
                    if incoming.isEmpty && !started && committed.isEmpty && alertsChecked.isEmpty {
                        // A batch in flight is waited for in short steps, so its writer's next
                        // starts soon after; steps that find nothing lengthen, up to the idle
                        // loop's 10 ms, so a writer retrying a database that is away costs no
                        // more turns than an idle loop.
                        try? await Task.sleep(for: .milliseconds(lanes.inFlight ? idleStep : 10))
                        idleStep = min(idleStep * 2, 10)
                    } else {
                        idleStep = 1
                    }
                }
            }
        } catch is CancellationError {}
        logger.info("stopping: \(figures.snapshot.eventsStored) event(s) stored in this run")
    }

    /// What an alert check starts from: the loop's knowledge as it starts.
    struct AlertCheckInput: Sendable {
        var listened: Double
        var heard: [String: CabinetHearing.Heard]
        var refusals: [(cabinet: String, detail: String)]
        var hearing: CabinetHearing
        /// The holed cabinets' first hole and since when.
        var holes: [String: (hole: ClosedRange<Int64>?, since: Double?)]
        var taken: Instant
        var now: Double
    }

    /// What an alert check came to.
    struct AlertCheck: Sendable {
        /// The cabinets with an open `ledger_conflict`; nil when the database failed.
        var frozen: Set<String>?
        var failure: String?
    }

    /// The hearing and refusals saved, every cabinet's facts read and judged, the alerts
    /// reconciled.
    func checkAlerts(_ input: AlertCheckInput) async -> AlertCheck {
        let c = configuration
        do {
            try await store.saveHearing(instance: c.instance, listened: input.listened, heard: input.heard)
            try await store.saveRefusals(input.refusals, now: input.now)
            var conditions: [(cabinet: String, condition: AlertRules.Condition)] = []
            for var facts in try await store.alertFacts(sites: c.mqtt.sites) {
                facts.hole = input.holes[facts.cabinet]?.hole
                facts.holeSince = input.holes[facts.cabinet]?.since
                facts.silence = input.hearing.silence(of: facts.cabinet, asOf: input.taken)
                for condition in AlertRules.evaluate(facts, now: input.now, c.alerts, gapGrace: c.ingest.gapGraceSeconds) { conditions.append((facts.cabinet, condition)) }
            }
            return AlertCheck(frozen: try await store.reconcileAlerts(conditions, sites: c.mqtt.sites, now: input.now))
        } catch {
            return AlertCheck(frozen: nil, failure: String(reflecting: error))
        }
    }

    /// What one writer's batch came to, for the loop to apply.
    struct Written: Sendable {
        var lane: Int
        /// Committed: stored now, or a copy of one stored before.
        var stored: [FleetMessage.Event] = []
        /// F5's copies, each with the ack its cabinet is held at.
        var conflicts: [(event: FleetMessage.Event, heldAt: Int64)] = []
        /// Events the database refused alone, with its reason.
        var setAside: [(event: FleetMessage.Event, reason: String)] = []
        /// The contiguous seq the batch wrote for each of its cabinets.
        var contiguous: [String: Int64] = [:]
        var inserted = 0
        var duplicates = 0
        var transactions = 0
        var took = 0.0
        var lag = 0.0
    }

    /// One writer's batch in one transaction; the sequences it writes are `base` (its cabinets'
    /// as the loop held them when the batch started) moved by the batch's seqs.
    func write(_ batch: [FleetMessage.Event], lane: Int, base: [String: (site: String, sequence: CabinetSequence)]) async throws -> Written {
        var written = Written(lane: lane)
        var base = base
        try await write(batch, base: &base, into: &written)
        return written
    }

    /// A batch the database refuses for its data (not its availability) is tried in halves
    /// until the events it refuses stand alone (a few refused events cost a few transactions
    /// each, not one per event of the batch); each of those is set aside: its seq stays a hole,
    /// so the cabinet's ack stops below it and `seq_gap` says so.
    private func write(_ batch: [FleetMessage.Event], base: inout [String: (site: String, sequence: CabinetSequence)], into written: inout Written) async throws {
        var touched: [String: (site: String, sequence: CabinetSequence)] = [:]
        let now = Self.now()
        Self.store(batch, into: &touched, over: base, now: now)
        let began = Date()
        let committing = touched
        let outcome: FleetStore.BatchOutcome
        do {
            outcome = try await retrying("a batch of \(batch.count) event(s)") { try await self.store.commit(batch, sequences: committing, now: now) }
        } catch let refused as FleetStore.Refused {
            guard batch.count > 1 else {
                written.setAside.append((batch[0], "\(refused)"))
                return
            }
            try await write(Array(batch[..<(batch.count / 2)]), base: &base, into: &written)
            try await write(Array(batch[(batch.count / 2)...]), base: &base, into: &written)
            return
        }
        for copy in outcome.conflicts {
            let heldAt = base[copy.cabinet]?.sequence.ackSeq ?? 0
            written.conflicts.append((copy, heldAt))
            touched[copy.cabinet]?.sequence.freeze(at: heldAt)
        }
        base.merge(touched) { $1 }
        written.contiguous.merge(touched.mapValues(\.sequence.contiguous), uniquingKeysWith: max)
        written.stored += batch
        written.inserted += outcome.inserted
        written.duplicates += outcome.duplicates
        written.transactions += 1
        written.took = Date().timeIntervalSince(began)
        written.lag = max(written.lag, batch.compactMap(\.published).map { Self.now() - $0 }.max() ?? 0)
    }

    /// Moves each event's cabinet's sequence in `sequences` by its seq (and its site to the
    /// event's); a cabinet not yet there starts from `over`'s entry, else from nothing. The
    /// writer's view of a batch before its commit, and the loop's once it is applied.
    static func store(_ events: [FleetMessage.Event], into sequences: inout [String: (site: String, sequence: CabinetSequence)],
                      over base: [String: (site: String, sequence: CabinetSequence)] = [:], now: Double) {
        for event in events {
            var entry = sequences[event.cabinet] ?? base[event.cabinet] ?? (event.site, CabinetSequence(now: now))
            entry.site = event.site
            entry.sequence.stored(event.seq, now: now)
            sequences[event.cabinet] = entry
        }
    }

    private func publishCommand(_ link: MQTTLink, id: String, cabinet: String, site: String, name: String, args: String, now: Double, by: String? = nil) -> Bool {
        let deadline = now + configuration.ingest.resendDeadlineSeconds
        let payload = "{\"v\":1,\"id\":\(jsonString(id)),\"deadline\":\(deadline),\"args\":\(args)\(by.map { ",\"by\":\(jsonString($0))" } ?? "")}"
        return link.publish("\(configuration.mqtt.prefix)\(site)/\(cabinet)/cmd/\(name)", payload) != nil
    }

    /// A database write tried until it succeeds: a restart of PostgreSQL rolls the transaction
    /// back, and nothing is acked meanwhile (crash point 12). Gives up only when cancelled.
    private func retrying<T: Sendable>(_ what: String, _ body: @Sendable () async throws -> T) async throws -> T {
        var wait = 0.2
        while true {
            defer { watchdog.beat() }
            do {
                let result = try await body()
                if wait > 0.2 { logger.info("the database took \(what) again") }
                figures.update { $0.databaseUp = true }
                return result
            } catch {
                // Refused for its data, not for the database's health: trying again cannot help.
                if let refused = FleetStore.Refused(error) { throw refused }
                figures.update { $0.databaseUp = false }
                if Task.isCancelled { throw CancellationError() }
                logger.error("the database did not take \(what) (\(String(reflecting: error))): trying again in \(wait) s")
                try? await Task.sleep(for: .seconds(wait))
                wait = min(wait * 2, 10)
            }
        }
    }

    private func describe(_ database: FleetConfiguration.Database) -> String {
        "\(database.name) at \(database.socketDirectory ?? database.host ?? "?"):\(database.port) as \(database.user)"
    }
}

/// A JSON string literal.
func jsonString(_ text: String) -> String { JSON.string(text).description }
