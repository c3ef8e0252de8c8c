import CoinMechChain
import CoinMechPluginABI

/// One link as configuration describes it: which plugin, under what name, with what settings,
/// and how it runs.
public struct LinkSpec: Sendable, Hashable {
    /// The link's name in decisions and statistics (unique within a chain).
    public var name: String
    /// Plugin name, looked up in the plugin directory.
    public var plugin: String
    /// The link's own configuration as a JSON object.
    public var configJSON: String
    /// In process or isolated, and the time budget per call.
    public var policy: LinkPolicy

    public init(name: String? = nil, plugin: String, configJSON: String = "{}", policy: LinkPolicy = LinkPolicy()) {
        self.name = name ?? plugin
        self.plugin = plugin
        self.configJSON = configJSON
        self.policy = policy
    }

    /// SHA-256 of everything but the plugin file that makes the link what it is: its
    /// configuration, isolation, budget and user. A quarantine holds while this stays the same.
    public var configSHA256: String {
        SHA256.hex(Array("\(configJSON)\n\(policy.isolation.rawValue)\n\(policy.budgetNanoseconds)\n\(policy.user ?? "")".utf8))
    }
}

/// Why a chain could not be built; names the link by position and name.
public struct ChainBuildError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 1-based position of the failing link, or 0 for errors about the whole chain.
    public var position: Int
    public var link: String
    public var cause: Cause

    public enum Cause: Sendable, Equatable {
        case plugin(PluginLoadError)
        case duplicateName
        /// The name is one the host gives its own decisions ("source", "inhibit", "deadline", …).
        case reservedName
        case empty
        /// `source.currencies` is not set and no link declares a currency it credits: the
        /// cabinet would take no coin, or (before 0.6) every mint's.
        case noCurrency
    }

    public init(position: Int, link: String, cause: Cause) {
        self.position = position
        self.link = link
        self.cause = cause
    }

    public var description: String {
        switch cause {
        case .plugin(let error): "chain link \(position) '\(link)': \(error)"
        case .duplicateName: "chain link \(position) '\(link)': another link already has this name"
        case .reservedName:
            "chain link \(position) '\(link)': the host names its own decisions so (reserved: \(Chain.reservedLinkNames.sorted().joined(separator: ", "))); give the link another name"
        case .empty: "the chain has no links: every coin would be rejected"
        case .noCurrency:
            "source.currencies is not set, and no link of the chain declares a currency it credits (\"currency\" in its description): set source.currencies to this cabinet's currency, e.g. [USD]"
        }
    }
}

/// Builds a complete chain off to the side: every link loaded and created, or an error and nothing.
public struct ChainBuilder: Sendable {
    public let loader: PluginLoader
    public let environment: ChainEnvironment

    public init(loader: PluginLoader, environment: ChainEnvironment = .standalone) {
        self.loader = loader
        self.environment = environment
    }

    /// Loads and instantiates every link in order; the result is ready to swap in. Warnings the
    /// plugins report (overlapping windows) and quarantines lifted by a changed plugin or
    /// configuration go to `warn`. A link still quarantined is built as a stand-in that rejects
    /// every reading: its plugin is not loaded.
    ///
    /// With `quarantiningCreateCrashes` (the daemon at start), an isolated link whose plugin host
    /// crashes creating the instance is quarantined and built as a stand-in, as an in-process
    /// crash is by the breadcrumb: the daemon starts, inhibited and saying why, instead of
    /// refusing to start and being restarted into the same crash. Without it (a reload, a check)
    /// the crash fails the build, and a reload keeps the running chain. So does a host stopped by
    /// its sandbox while loading (a forbidden call from the plugin's constructor, entry or
    /// create): quarantined at start (`sandbox_violation`), a failed build at a reload.
    public func build(generation: UInt64, links specs: [LinkSpec], quarantiningCreateCrashes: Bool = false,
                      warn: (String) -> Void = { _ in }) throws(ChainBuildError) -> Chain {
        guard !specs.isEmpty else { throw ChainBuildError(position: 0, link: "", cause: .empty) }
        var links: [ChainLink] = []
        var names: Set<String> = []
        /// Quarantines the new chain lifts: only once every link is built.
        var lifts: [(link: String, position: Int, record: QuarantineRecord)] = []
        for (offset, spec) in specs.enumerated() {
            let position = offset + 1
            guard !Chain.reservedLinkNames.contains(spec.name) else {
                throw ChainBuildError(position: position, link: spec.name, cause: .reservedName)
            }
            guard names.insert(spec.name).inserted else {
                throw ChainBuildError(position: position, link: spec.name, cause: .duplicateName)
            }
            do throws(PluginLoadError) {
                let (link, lifted) = try build(spec, site: PluginBreadcrumb.Site(generation: generation, index: offset),
                                               quarantiningCreateCrashes: quarantiningCreateCrashes) { warn("chain link \(position) '\(spec.name)': \($0)") }
                if let lifted { lifts.append((spec.name, position, lifted)) }
                for warning in PluginDescription.warnings(in: link.origin.description) {
                    warn("chain link \(position) '\(spec.name)': \(warning)")
                }
                links.append(link)
            } catch {
                throw ChainBuildError(position: position, link: spec.name, cause: .plugin(error))
            }
        }
        let acceptPolicy = try self.acceptPolicy(for: links)
        for lift in lifts {
            environment.quarantine?.lift(lift.link)
            warn("chain link \(lift.position) '\(lift.link)': quarantine lifted: the link's plugin file or configuration changed since it was \(lift.record.problem.state) (\(lift.record.problem.reason))")
        }
        return Chain(generation: generation, links: links, acceptPolicy: acceptPolicy, breadcrumb: environment.breadcrumb)
    }

    /// The coins the chain may credit: the environment's, or, where the cabinet names no
    /// currency (`currenciesFromChain`), the mint coins of the currencies its links declare and
    /// the declared tokens. Fail closed: a link cannot credit a currency nobody configured or
    /// declared, and a chain that declares none is refused.
    private func acceptPolicy(for links: [ChainLink]) throws(ChainBuildError) -> AcceptPolicy {
        guard environment.currenciesFromChain else { return environment.acceptPolicy }
        var currencies: [String] = []
        for link in links {
            for currency in PluginDescription.currencies(in: link.origin.description) where !currencies.contains(currency) { currencies.append(currency) }
        }
        guard !currencies.isEmpty || !environment.acceptPolicy.coins.coins.isEmpty else {
            throw ChainBuildError(position: 0, link: "", cause: .noCurrency)
        }
        return environment.acceptPolicy.adding(currencies: currencies)
    }

    /// The link, and the quarantine record it lifts (another plugin file or configuration), if any.
    private func build(_ spec: LinkSpec, site: PluginBreadcrumb.Site, quarantiningCreateCrashes: Bool,
                       warn: (String) -> Void) throws(PluginLoadError) -> (ChainLink, QuarantineRecord?) {
        let file = try loader.prepare(plugin: spec.plugin)
        let identity = LinkIdentity(name: spec.name, plugin: spec.plugin, sha256: file.sha256, configSHA256: spec.configSHA256,
                                    budgetNanoseconds: spec.policy.budgetNanoseconds)
        var lifted: QuarantineRecord?
        if let record = environment.quarantine?.record(for: spec.name) {
            if record.holds(for: identity) { return (Self.standIn(for: spec, file: file, record: record, alarm: environment.alarm), nil) }
            lifted = record
        }
        if let problem = environment.suspectInProcess, spec.policy.isolation == .inProcess, !ShippedPlugins.names.contains(spec.plugin),
           let quarantine = environment.quarantine {
            // Its plugin is not loaded: it may be what corrupted the daemon's memory.
            let record = QuarantineRecord(link: identity, problem: problem)
            if let failure = quarantine.add(record) { warn("cannot record the quarantine: \(failure)") }
            warn("chain link \(site.index + 1) '\(spec.name)': quarantined: \(problem.reason)")
            return (Self.standIn(for: spec, file: file, record: record, alarm: environment.alarm), nil)
        }
        environment.breadcrumb?.record(generation: site.generation, index: site.index, link: identity)
        let health = LinkHealth(alarm: environment.alarm)
        switch spec.policy.isolation {
        case .inProcess:
            // The entry runs in this process too: mark it as the link's create.
            let image = try PluginBreadcrumb.around(site, phase: .create) { () throws(PluginLoadError) in try PluginLoader.image(of: file) }
            let link = try image.instantiate(configJSON: spec.configJSON, instanceName: spec.name, log: environment.log, site: site)
                .link(named: spec.name, policy: spec.policy, health: health)
            return (link, lifted)
        case .process:
            let validator: IsolatedValidator
            do throws(PluginLoadError) {
                validator = try IsolatedValidator(file: file, spec: spec, identity: identity, health: health, environment: environment)
            } catch {
                guard quarantiningCreateCrashes, let quarantine = environment.quarantine else { throw error }
                let problem: LinkHealth.Problem
                switch error {
                case .sandboxViolation(_, let call):
                    // From its constructor, its entry or its create: an escape tried before it
                    // decided anything.
                    problem = LinkHealth.Problem(
                        state: .quarantined, cause: "sandbox_violation",
                        reason: "its plugin made a system call its sandbox forbids (\(call)) while loading or creating the instance: quarantined at once; the mech stays inhibited until a reload with another plugin file or configuration for this link")
                case .hostCrashed(_, let message):
                    problem = LinkHealth.Problem(
                        state: .quarantined, cause: "crashed_in_create",
                        reason: "its plugin host crashed creating the instance (\(message)); the mech stays inhibited until a reload with another plugin file or configuration for this link")
                default:
                    throw error
                }
                let record = QuarantineRecord(link: identity, problem: problem)
                if let failure = quarantine.add(record) { warn("cannot record the quarantine: \(failure)") }
                warn("quarantined: \(record.problem.reason)")
                return (Self.standIn(for: spec, file: file, record: record, alarm: environment.alarm), nil)
            }
            let origin = LinkOrigin(metadata: validator.ready.metadata, sha256: file.sha256, loadedAt: LinkHealth.wallClock(),
                                    description: validator.ready.description)
            return (ChainLink(name: spec.name, origin: origin, validator: validator, policy: spec.policy, health: health), lifted)
        }
    }

    /// A quarantined link: its plugin is not loaded; the chain does not call it and rejects for it.
    private static func standIn(for spec: LinkSpec, file: PluginFile, record: QuarantineRecord, alarm: PluginAlarm?) -> ChainLink {
        // Every kind, so that no reading gets past a link that is out of service.
        let origin = LinkOrigin(plugin: spec.plugin, version: "(not loaded)", sha256: file.sha256, loadedAt: LinkHealth.wallClock(),
                                readingKinds: PluginABI.knownKinds)
        return ChainLink(name: spec.name, origin: origin, validator: QuarantinedValidator(), policy: spec.policy,
                         health: LinkHealth(alarm: alarm, initial: record.problem))
    }
}

/// What stands in for a quarantined link: rejects every reading (the chain does not even call it).
final class QuarantinedValidator: Validator {
    let call = ValidatorCall(function: { _, _, decision in
        guard let decision else { return }
        coinmech_decision_reject(decision, "quarantined", "the link is quarantined")
    }, context: nil)
}
