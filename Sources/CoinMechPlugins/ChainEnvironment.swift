import CoinMechChain

/// What a chain is built into: where link calls are announced, which links are quarantined,
/// who is told when a link's health changes, where plugins' log lines go, and how isolated
/// links are run. A tool or a test builds with `.standalone`; the daemon with all of it.
public struct ChainEnvironment: Sendable {
    public var breadcrumb: PluginBreadcrumb?
    public var quarantine: QuarantineStore?
    public var alarm: PluginAlarm?
    /// Plugins' own log lines (`coinmech_log`), under the link's name.
    public var log: PluginLogSink
    /// The host's lines about links: crashes, restarts, quarantines, a plugin host's output.
    public var report: PluginLogSink
    public var isolation: IsolationSettings
    /// The coins the cabinet takes: what every accept is checked against.
    public var acceptPolicy: AcceptPolicy
    /// The cabinet names no currency (`source.currencies`): each chain takes the currencies its
    /// links declare, besides `acceptPolicy`'s coins (the declared tokens).
    public var currenciesFromChain = false
    /// Set after a crash loop no breadcrumb explains: every in-process link of a plugin outside
    /// the shipped set is quarantined with this problem as it is built.
    public var suspectInProcess: LinkHealth.Problem?

    public init(breadcrumb: PluginBreadcrumb? = nil, quarantine: QuarantineStore? = nil, alarm: PluginAlarm? = nil,
                log: @escaping PluginLogSink = PluginLog.standardError, report: @escaping PluginLogSink = PluginLog.standardError,
                isolation: IsolationSettings = IsolationSettings(), acceptPolicy: AcceptPolicy = .standard,
                suspectInProcess: LinkHealth.Problem? = nil) {
        self.breadcrumb = breadcrumb
        self.quarantine = quarantine
        self.alarm = alarm
        self.log = log
        self.report = report
        self.isolation = isolation
        self.acceptPolicy = acceptPolicy
        self.suspectInProcess = suspectInProcess
    }

    /// No breadcrumb, no quarantine, logs on standard error.
    public static var standalone: ChainEnvironment { ChainEnvironment() }
}

/// How isolated links' plugin hosts are run and when a crashing one is quarantined.
public struct IsolationSettings: Sendable, Hashable {
    /// The `coinmech-plugin-host` executable (nil: next to this process's executable, or in
    /// `../lib/coinmech/` from it).
    public var hostExecutable: String?
    /// This many crashes (or budget overruns) within `crashWindowSeconds` quarantine the link.
    public var maxCrashes: Int
    public var crashWindowSeconds: Double
    /// How long a plugin host may take to load the plugin and create the instance.
    public var startTimeoutSeconds: Double

    public init(hostExecutable: String? = nil, maxCrashes: Int = 3, crashWindowSeconds: Double = 60, startTimeoutSeconds: Double = 10) {
        self.hostExecutable = hostExecutable
        self.maxCrashes = maxCrashes
        self.crashWindowSeconds = crashWindowSeconds
        self.startTimeoutSeconds = startTimeoutSeconds
    }
}
