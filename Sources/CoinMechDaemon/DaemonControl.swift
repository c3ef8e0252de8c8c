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
        let status = loop.status
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
        reply.credit = ((try? creditAccounts()) ?? []).map(Self.account)
        // A link out of service keeps the mech inhibited whatever the operator said.
        // (The chain's own word until the deciding loop has reviewed it, just after a start.)
        reply.pluginInhibit = status.core.pluginInhibit ?? PluginHealthReview.inhibitReason(chain.outOfService)
        if let acceptor = status.acceptor {
            // Lost events since the last collection, from the ledger: a restart does not hide them.
            reply.acceptor = acceptor.reply(lostSinceCollect: try? ledger.acceptorLostEvents(source: configuration.source.name))
            if acceptor.ledgerFailure != nil { reply.ledgerOK = false }
        }
        return reply.json
    }

    static func problem(link: String, _ problem: LinkHealth.Problem) -> StatusReply.LinkProblem {
        StatusReply.LinkProblem(link: link, state: "\(problem.state)", cause: problem.cause, reason: problem.reason, since: problem.since)
    }

    func chain() -> JSON {
        let chain = chainHolder.current
        let links: [ChainReply.Link] = chain.links.map { link in
            let stats = link.statistics.snapshot
            var entry = ChainReply.Link(
                name: link.name, plugin: link.origin.plugin, version: link.origin.version, sha256: link.origin.sha256,
                loadedAt: link.origin.loadedAt, license: link.origin.license, summary: link.origin.summary,
                readingKinds: link.origin.readingKindNames, abi: PluginABI.text(link.origin.abiVersion), isolation: link.policy.isolation.rawValue,
                budgetMilliseconds: Double(link.policy.budgetNanoseconds) / 1e6, state: "\(link.health.current)",
                statistics: .init(calls: Int64(stats.calls), accepts: Int64(stats.accepts), rejects: Int64(stats.rejects), passes: Int64(stats.passes),
                                  meanNanoseconds: stats.meanNanoseconds.rounded(), sampledCalls: Int64(stats.sampledCalls),
                                  pluginErrors: Int64(stats.pluginErrors), lies: Int64(stats.lies)),
                lastPluginError: stats.lastPluginError, lastLie: stats.lastLie,
                problem: link.health.problem.map { Self.problem(link: link.name, $0) },
                // The plugin's own description, kept only when it is the object it must be.
                description: link.origin.description.flatMap(JSON.parse).flatMap { $0.object == nil ? nil : $0 })
            if let sandbox = (link.validator as? IsolatedValidator)?.ready.sandbox {
                entry.sandbox = .init(layers: sandbox.layers, landlockABI: Int64(sandbox.landlockABI), seccomp: sandbox.seccomp, limits: sandbox.limits,
                                      networkNamespace: sandbox.networkNamespace, missing: sandbox.missing,
                                      required: link.policy.sandbox.missing == .required, memoryMiB: Int64(link.policy.sandbox.memoryMiB))
            }
            return entry
        }
        return ChainReply(generation: Int64(chain.generation), links: links, terminalRejects: Int64(chain.terminalStatistics.snapshot.rejects)).json
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
            loop.submit(.payout(PayoutRequest(requestID: requestID, amountMinor: amount, currency: currency, by: peer.userName), completion: completion))
        case .refill(let unit, let coins, let requestID):
            loop.submit(.inventory(InventoryRequest(unit: unit, kind: .refill(coins: coins), requestID: requestID, by: peer.userName), completion: completion))
        case .float(let unit, let level, let requestID):
            loop.submit(.inventory(InventoryRequest(unit: unit, kind: .float(level: level), requestID: requestID, by: peer.userName), completion: completion))
        case .spend(let amount, let currency, let item, let requestID):
            loop.submit(.credit(.spend(requestID: requestID, amountMinor: amount, currency: currency, item: item, by: peer.userName), completion: completion))
        case .refund(let requestID):
            loop.submit(.credit(.refund(requestID: requestID, by: peer.userName), completion: completion))
        case .cancel(let requestID):
            loop.submit(.credit(.cancel(requestID: requestID, by: peer.userName), completion: completion))
        case .status, .chain, .totals, .events, .subscribe, .teachStatus, .explain, .payoutPlan, .credit:
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
        let status = loop.status
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
