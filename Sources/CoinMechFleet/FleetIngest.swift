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

    public init(configuration: FleetConfiguration, store: FleetStore, logger: Logger, outbox: CommandOutbox, figures: FleetFigures) {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        self.outbox = outbox
        self.figures = figures
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
        let link: MQTTLink
        do {
            link = try MQTTLink(.init(clientID: c.mqtt.clientID, host: c.mqtt.host, port: c.mqtt.port, keepalive: c.mqtt.keepaliveSeconds,
                                      maxInflight: c.mqtt.maxInflight, username: c.mqtt.username, password: password, will: nil,
                                      subscriptions: c.subscriptions,
                                      tls: c.mqtt.tls, cleanSession: false))
        } catch { throw FleetError.mqtt(error.message) }
        link.start()
        defer { link.stop() }

        var pacer = AckPacer()
        /// Cabinets with a seq stored beyond a hole: the only ones the gap check looks at.
        var holed = Set(sequences.filter { $0.value.sequence.firstHole != nil }.keys)
        /// The resends this run asked for, by id: a reply's `missing` is believed only inside
        /// the range that was asked.
        var resends: [String: (cabinet: String, range: ClosedRange<Int64>)] = [:]
        /// Copies of an identity already in a batch: kept for the next, where the store
        /// compares them with the stored event (F5).
        var carried: [FleetMessage.Event] = []
        var nextAlerts = 0.0

        /// One batch in one transaction; the sequences move only once it has committed. A
        /// batch the database refuses for its data (not its availability) is tried event by
        /// event, and an event it refuses alone is set aside, logged and counted: its seq stays
        /// a hole, so the cabinet's ack stops below it and `seq_gap` says so.
        func commit(_ batch: [FleetMessage.Event]) async throws {
            var touched: [String: (site: String, sequence: CabinetSequence)] = [:]
            let now = Self.now()
            for event in batch {
                var entry = touched[event.cabinet] ?? sequences[event.cabinet] ?? (event.site, CabinetSequence(now: now))
                entry.site = event.site
                entry.sequence.stored(event.seq, now: now)
                touched[event.cabinet] = entry
            }
            let began = Date()
            let committing = touched
            let outcome: FleetStore.BatchOutcome
            do {
                outcome = try await retrying("a batch of \(batch.count) event(s)") { try await self.store.commit(batch, sequences: committing, now: now) }
            } catch let refused as FleetStore.Refused {
                guard batch.count > 1 else {
                    figures.update { $0.refused += 1 }
                    logger.error("cabinet \(batch[0].cabinet): seq \(batch[0].seq) set aside, the database refuses it (\(refused)): its ack stops below it")
                    return
                }
                for event in batch { try await commit([event]) }
                return
            }
            let took = Date().timeIntervalSince(began)
            for copy in outcome.conflicts {
                // Held where the ack was before this batch.
                touched[copy.cabinet]?.sequence.freeze(at: sequences[copy.cabinet]?.sequence.ackSeq ?? 0)
                logger.error("cabinet \(copy.cabinet): seq \(copy.seq) arrived unlike the stored event (kind \(copy.kind)): its ledger was replaced; its ack is held (F5)")
            }
            for (cabinet, entry) in touched {
                sequences[cabinet] = entry
                if entry.sequence.firstHole != nil { holed.insert(cabinet) } else { holed.remove(cabinet) }
                pacer.committed(cabinet: cabinet, site: entry.site, seq: entry.sequence.ackSeq)
            }
            let lag = batch.compactMap(\.published).map { Self.now() - $0 }.max() ?? 0
            let contiguous = touched.mapValues(\.sequence.contiguous)
            figures.update {
                $0.eventsStored += outcome.inserted
                $0.duplicates += outcome.duplicates
                $0.batches += 1
                $0.conflicts += outcome.conflicts.count
                $0.commitSeconds = took
                $0.lastLagSeconds = lag
                $0.contiguous.merge(contiguous) { $1 }
            }
        }

        /// A write of a message's own (state, status, totals, reply): retried while the
        /// database is away; refused for its data, logged and counted.
        func save(_ what: String, _ body: @Sendable () async throws -> Void) async throws {
            do {
                try await retrying(what, body)
            } catch let refused as FleetStore.Refused {
                figures.update { $0.refused += 1 }
                logger.error("\(what) set aside, the database refuses it: \(refused)")
            }
        }

        while !Task.isCancelled {
            let incoming = link.takeArrivals()
            // Silence is judged as of this take: what came after is not read yet (a loop held
            // up by the database knows no less).
            let (takenWall, taken) = (Self.now(), Instant.now)
            var events = carried
            carried = []
            var seen = Set(events.map { "\($0.cabinet)/\($0.seq)" })
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
                case .message(let topic, let payload, let retained):
                    let message: FleetMessage?
                    do throws(FleetMessage.Refusal) {
                        message = try FleetMessage.read(topic: topic, payload: payload, prefix: p)
                    } catch {
                        figures.update { $0.refused += 1 }
                        logger.warning("refused: \(error)")
                        continue
                    }
                    if let message { hearing.heard(message.cabinet, retained: retained, at: moment) }
                    switch message {
                    case .event(let event)?:
                        // One copy per identity in a batch; another goes in the next.
                        if seen.insert("\(event.cabinet)/\(event.seq)").inserted { events.append(event) } else { carried.append(event) }
                    case .state(let state)?:
                        try await save("state of \(state.cabinet)") { try await self.store.saveState(state, receivedAt: Self.now()) }
                        sequences[state.cabinet]?.site = state.site
                        hearing.promised(state.cabinet, heartbeat: state.heartbeat, at: moment)
                        if state.online, !retained {
                            // F6: the bridge may have reconnected after a broker restart lost the retained ack.
                            pacer.now(cabinet: state.cabinet, site: state.site, seq: sequences[state.cabinet]?.sequence.ackSeq ?? 0)
                        }
                    case .status(let cabinet, let site, let json)?:
                        try await save("status of \(cabinet)") { try await self.store.saveStatus(cabinet: cabinet, site: site, json: json, now: Self.now()) }
                    case .totals(let cabinet, let site, let json)?:
                        try await save("totals of \(cabinet)") { try await self.store.saveTotals(cabinet: cabinet, site: site, json: json, now: Self.now()) }
                    case .reply(let reply)?:
                        try await save("reply \(reply.id)") { try await self.store.recordReply(reply) }
                        guard reply.command == "resend", let asked = resends.removeValue(forKey: reply.id) else { break }
                        guard asked.cabinet == reply.cabinet else {
                            logger.error("reply \(reply.id) names cabinet \(reply.cabinet), the resend was \(asked.cabinet)'s: its missing ranges are ignored")
                            break
                        }
                        // Only inside the range asked for: a bridge's slip cannot settle events it never looked at.
                        let missing = reply.missing.compactMap { range -> ClosedRange<Int64>? in
                            let lower = max(range.lowerBound, asked.range.lowerBound), upper = min(range.upperBound, asked.range.upperBound)
                            return lower <= upper ? lower...upper : nil
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

            var start = 0
            while start < events.count, !Task.isCancelled {
                let batch = Array(events[start..<min(start + c.ingest.batchMax, events.count)])
                start += batch.count
                try await commit(batch)
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
                guard let hole = sequence.resendDue(now: now, grace: c.ingest.gapGraceSeconds) else { continue }
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
            if now >= nextAlerts {
                nextAlerts = now + c.alerts.checkSeconds
                do {
                    try await store.saveHearing(instance: c.instance, listened: hearing.listened(at: taken), heard: hearing.unsaved)
                    hearing.saved()
                    var conditions: [(cabinet: String, condition: AlertRules.Condition)] = []
                    for var facts in try await store.alertFacts(sites: c.mqtt.sites) {
                        facts.hole = sequences[facts.cabinet]?.sequence.firstHole
                        facts.holeSince = sequences[facts.cabinet]?.sequence.holeSince
                        facts.silence = hearing.silence(of: facts.cabinet, asOf: taken)
                        for condition in AlertRules.evaluate(facts, now: now, c.alerts, gapGrace: c.ingest.gapGraceSeconds) { conditions.append((facts.cabinet, condition)) }
                    }
                    let frozen = try await store.reconcileAlerts(conditions, sites: c.mqtt.sites, now: now)
                    for cabinet in sequences.keys {
                        let isFrozen = sequences[cabinet]!.sequence.frozenAt != nil
                        if frozen.contains(cabinet) && !isFrozen {
                            sequences[cabinet]!.sequence.freeze(at: sequences[cabinet]!.sequence.ackSeq)
                        } else if !frozen.contains(cabinet) && isFrozen {
                            // An operator acknowledged the conflict: the ack moves again.
                            sequences[cabinet]!.sequence.thaw()
                            pacer.committed(cabinet: cabinet, site: sequences[cabinet]!.site, seq: sequences[cabinet]!.sequence.ackSeq)
                        }
                    }
                    figures.update { $0.databaseUp = true }
                } catch {
                    figures.update { $0.databaseUp = false }
                    logger.error("alerts not checked: the database failed (\(String(reflecting: error)))")
                }
            }
            if incoming.isEmpty { try? await Task.sleep(for: .milliseconds(10)) }
        }
        logger.info("stopping: \(figures.snapshot.eventsStored) event(s) stored in this run")
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
