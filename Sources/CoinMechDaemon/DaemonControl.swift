import CoinMechChain
import CoinMechConfiguration
import CoinMechCore
import CoinMechLedger
import CoinMechModel
import CoinMechPlugins
import CoinMechCalibration
import CoinMechProtocol
import CoinMechPublisher
import CoinMechSources
import CoinMechSupport
import CoinMechTeach
import Foundation

/// The socket API's view of the daemon: reads state directly, sends changes to the
/// deciding loop (the only ledger writer).
struct DaemonControl: ControlPlane {
    let configuration: DaemonConfiguration
    let loop: DecidingLoop
    let chainHolder: ChainHolder
    let ledger: Ledger
    let reloader: Reloader
    let started: Date

    func status() -> JSON {
        let status = loop.status.withLock { $0 }
        let chain = chainHolder.current
        let c = status.core.counters
        var reply = StatusReply(
            source: .init(kind: configuration.source.kind, device: configuration.source.device, connected: status.connected,
                          reason: status.disconnectedReason),
            inhibited: status.core.inhibited)
        reply.counters.readings = Int64(c.readings)
        reply.counters.accepted = Int64(c.accepted)
        reply.counters.credited = Int64(c.credited)
        reply.counters.returnedAfterAccept = Int64(c.returnedAfterAccept)
        reply.counters.unconfirmed = Int64(c.unconfirmed)
        reply.counters.queries = Int64(c.queries)
        reply.counters.connects = Int64(c.connects)
        reply.counters.reconnects = Int64(c.reconnects)
        reply.counters.rejected = Int64(c.rejected)
        reply.counters.duplicates = Int64(c.duplicates)
        reply.counters.protocolErrors = Int64(c.protocolErrors)
        reply.counters.badAlloy = Int64(c.badAlloy)
        reply.counters.deadlinePassed = Int64(c.deadlineWithdrawn)
        reply.counters.lateAnswers = Int64(c.lateAnswers)
        // Links that answered nonsense (their coins were returned as plugin_error), and links that
        // accepted coins this cabinet does not take (returned as plugin_lie).
        for link in chain.links {
            let stats = link.statistics.snapshot
            if stats.pluginErrors > 0 {
                reply.pluginErrors.append(.init(link: link.name, count: Int64(stats.pluginErrors), last: stats.lastPluginError ?? ""))
            }
            if stats.lies > 0 { reply.pluginLies.append(.init(link: link.name, count: Int64(stats.lies), last: stats.lastLie ?? "")) }
        }
        // Links out of service (hung, quarantined) or restarting their plugin host, and why.
        reply.linkProblems = chain.problems.map { link, problem in Self.problem(link: link.name, problem) }
        reply.pending = Int64(status.core.pending)
        reply.ledgerOK = !status.core.ledgerFailing
        reply.chainGeneration = Int64(chain.generation)
        reply.links = Int64(chain.links.count)
        reply.uptimeSeconds = (Date().timeIntervalSince(started) * 10).rounded() / 10
        // How long ago the deciding loop last turned: it turns at least every second, so more
        // means it is stuck (in a plugin, a commit); the watchdog stops then too.
        reply.heartbeatAgeMilliseconds = Int64((Instant.now.nanoseconds &- loop.heartbeat.load(ordering: .relaxed)) / 1_000_000)
        reply.lastSeq = (try? ledger.lastSeq()) ?? 0
        reply.ledgerBytes = [ledger.path, ledger.path + "-wal"].reduce(0) { total, file in
            total + (((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? NSNumber)?.int64Value ?? 0)
        }
        let latency = c.decisionLatency
        reply.decisionLatency = .init(boundsMicroseconds: LatencyHistogram.boundsMicroseconds.map { Int64($0) }, counts: latency.counts.map { Int64($0) },
                                      sumMicroseconds: Int64(latency.sumMicroseconds))
        reply.version = Daemon.version
        // A link out of service keeps the mech inhibited whatever the operator said.
        // (The chain's own word until the deciding loop has reviewed it, just after a start.)
        reply.pluginInhibit = status.core.pluginInhibit ?? PluginHealthReview.inhibitReason(chain.outOfService)
        if let acceptor = status.acceptor {
            // Lost events since the last collection, from the ledger: a restart does not hide them.
            reply.acceptor = acceptor.json(lostSinceCollect: try? ledger.acceptorLostEvents(source: configuration.source.name))
            if acceptor.ledgerFailure != nil { reply.ledgerOK = false }
        }
        return reply.json
    }

    static func problem(link: String, _ problem: LinkHealth.Problem) -> StatusReply.LinkProblem {
        StatusReply.LinkProblem(link: link, state: "\(problem.state)", cause: problem.cause, reason: problem.reason, since: problem.since)
    }

    func chain() -> JSON {
        let chain = chainHolder.current
        let links: [JSON] = chain.links.map { link in
            let stats = link.statistics.snapshot
            var object: [String: JSON] = [
                "name": .string(link.name), "plugin": .string(link.origin.plugin), "version": .string(link.origin.version),
                "sha256": .string(link.origin.sha256), "loaded_at": .double(link.origin.loadedAt),
                "license": .string(link.origin.license), "summary": .string(link.origin.summary),
                "reading_kinds": .array(link.origin.readingKindNames.map { .string($0) }),
                "abi": .string(PluginABI.text(link.origin.abiVersion)),
                "isolation": .string(link.policy.isolation.rawValue), "budget_ms": .double(Double(link.policy.budgetNanoseconds) / 1e6),
                "state": .string("\(link.health.current)"),
                "statistics": [
                    "calls": .int(Int64(stats.calls)), "accepts": .int(Int64(stats.accepts)), "rejects": .int(Int64(stats.rejects)),
                    "passes": .int(Int64(stats.passes)), "mean_ns": .double(stats.meanNanoseconds.rounded()),
                    "sampled_calls": .int(Int64(stats.sampledCalls)), "plugin_errors": .int(Int64(stats.pluginErrors)),
                    "lies": .int(Int64(stats.lies)),
                ],
            ]
            if let last = stats.lastPluginError { object["last_plugin_error"] = .string(last) }
            if let last = stats.lastLie { object["last_lie"] = .string(last) }
            if let sandbox = (link.validator as? IsolatedValidator)?.ready.sandbox {
                object["sandbox"] = [
                    "layers": .string(sandbox.layers), "landlock_abi": .int(Int64(sandbox.landlockABI)), "seccomp": .bool(sandbox.seccomp),
                    "limits": .bool(sandbox.limits), "network_namespace": .bool(sandbox.networkNamespace),
                    "missing": .array(sandbox.missing.map { .string($0) }), "required": .bool(link.policy.sandbox.missing == .required),
                    "memory_mb": .int(Int64(link.policy.sandbox.memoryMiB)),
                ]
            }
            if let problem = link.health.problem { object["problem"] = StatusReply.json(Self.problem(link: link.name, problem)) }
            if let description = link.origin.description.flatMap(JSON.parse) { object["description"] = description }
            return .object(object)
        }
        return ["generation": .int(Int64(chain.generation)), "links": .array(links),
                "terminal": ["rejects": .int(Int64(chain.terminalStatistics.snapshot.rejects))]]
    }

    func control(_ command: OperatorCommand, by peer: PeerCredentials, completion: @escaping @Sendable (Result<JSON, CommandError>) -> Void) {
        switch command {
        case .inhibit(let on): inhibit(on, by: peer, completion: completion)
        case .collect: collect(by: peer, completion: completion)
        case .reload: reload(by: peer, completion: completion)
        case .teachStart(let currency, let code, let coins): teachStart(currency: currency, code: code, coins: coins, by: peer, completion: completion)
        case .teachCommit: teachCommit(by: peer, completion: completion)
        case .teachAbort: teachAbort(by: peer, completion: completion)
        case .payout(let amount, let currency, let requestID):
            loop.submit(.payout(amountMinor: amount, currency: currency, requestID: requestID, by: peer.userName, completion: completion))
        case .refill(let unit, let coins, let requestID):
            loop.submit(.inventory(unit: unit, .refilled(added: coins, by: peer.userName, requestID: requestID), completion: completion))
        case .float(let unit, let level, let requestID):
            loop.submit(.inventory(unit: unit, .set(level: level, by: peer.userName, requestID: requestID), completion: completion))
        case .status, .chain, .totals, .events, .subscribe, .teachStatus, .explain, .payoutPlan:
            completion(.failure(CommandError(.badRequest, "'\(command.name.rawValue)' is not a control command")))
        }
    }

    private func inhibit(_ on: Bool, by peer: PeerCredentials, completion: @escaping @Sendable (Result<JSON, CommandError>) -> Void) {
        loop.submit(.inhibit(on, by: peer.userName, completion: completion))
    }

    private func collect(by peer: PeerCredentials, completion: @escaping @Sendable (Result<JSON, CommandError>) -> Void) {
        loop.submit(.collect(by: peer.userName, completion: completion))
    }

    private func reload(by peer: PeerCredentials, completion: @escaping @Sendable (Result<JSON, CommandError>) -> Void) {
        reloader.request(reason: "reload by \(peer.userName)", completion: completion)
    }

    func teachStatus() -> JSON {
        let status = loop.status.withLock { $0 }
        guard let session = status.core.teach else { return ["teaching": false] }
        let request = session.request
        // The windows around it as the running chain has them (none if the link changed meanwhile).
        let target = try? TeachTarget.resolve(currency: request.currency, code: request.code, chain: chainHolder.current,
                                              source: configuration.source.name, stateDirectory: configuration.stateDirectory).get()
        let table = target.flatMap { $0.link == request.link && $0.file == request.file ? $0.table : nil }
        return TeachReport(session: session, table: table, minimumSamples: CoinCalibration.minimumSamples)
            .json(source: configuration.source.name, inhibited: status.core.inhibited, now: .now)
    }

    private func teachStart(currency: String, code: String, coins: Int, by peer: PeerCredentials,
                    completion: @escaping @Sendable (Result<JSON, CommandError>) -> Void) {
        if let why = configuration.source.mech.unteachable { return completion(.failure(CommandError(.failed, why))) }
        switch TeachTarget.resolve(currency: currency, code: code, chain: chainHolder.current, source: configuration.source.name,
                                   stateDirectory: configuration.stateDirectory) {
        case .failure(let failure):
            completion(.failure(CommandError(.failed, failure.message)))
        case .success(let target):
            let request = TeachRequest(currency: target.currency, code: target.code, coins: coins, link: target.link, file: target.file)
            loop.submit(.teachStart(request, by: peer.userName, completion: completion))
        }
    }

    /// Commits, then reloads so coin-table uses the taught window; the reply says both.
    private func teachCommit(by peer: PeerCredentials, completion: @escaping @Sendable (Result<JSON, CommandError>) -> Void) {
        let reloader = reloader
        loop.submit(.teachCommit(by: peer.userName) { result in
            guard case .success(.object(let committed)) = result else { return completion(result) }
            reloader.request(reason: "teach commit by \(peer.userName)") { reloaded in
                switch reloaded {
                case .success(let reload):
                    completion(.success(.object(committed.merging(["reload": reload]) { $1 })))
                case .failure(let error):
                    completion(.failure(CommandError(.failed, "the calibration is recorded (event #\(committed["seq"]?.int ?? 0)) and written to "
                        + "\(committed["file"]?.string ?? "its file"), but the reload failed: \(error.message); coin-table keeps its previous "
                        + "windows until a reload succeeds (coinctl reload)")))
                }
            }
        })
    }

    private func teachAbort(by peer: PeerCredentials, completion: @escaping @Sendable (Result<JSON, CommandError>) -> Void) {
        loop.submit(.teachAbort(by: peer.userName, completion: completion))
    }

    func explain(diameter: Double, weight: Double?, thickness: Double?, completion: @escaping @Sendable (Result<JSON, CommandError>) -> Void) {
        loop.submit(.explain(Reading(deviceSeq: 0, diameterMM: diameter, weightG: weight, thicknessMM: thickness, source: configuration.source.name),
                             completion: completion))
    }
}
