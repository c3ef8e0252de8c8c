import CoinMechChain
import CoinMechConfiguration
import CoinMechPlugins
import Foundation
import Logging

extension Daemon {
    /// The breadcrumb (reading what crashed the last run, then recording this one), the
    /// quarantine list, the alarm, and where plugins' lines go. A link that crashed the last run
    /// is quarantined here, before the chain is built, so the daemon starts instead of crashing
    /// again: it serves the socket and keeps the mech inhibited, saying why.
    static func pluginEnvironment(_ configuration: DaemonConfiguration, logger: Logger) -> ChainEnvironment {
        let quarantine = QuarantineStore(stateDirectory: configuration.stateDirectory)
        if let problem = quarantine.loadProblem { logger.error("\(problem)") }
        var breadcrumb: PluginBreadcrumb?
        do throws(BreadcrumbError) {
            breadcrumb = try PluginBreadcrumb(stateDirectory: configuration.stateDirectory)
        } catch {
            logger.error("a crash in a plugin will not be traced to its link: \(error)")
        }
        if let crash = breadcrumb?.lastRun {
            let place = "\(crash.phase.map { "\($0)" } ?? "a call") of chain generation \(crash.generation)"
            if let link = crash.link {
                let when = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: crash.time))
                let problem = LinkHealth.Problem(
                    state: .quarantined, cause: "crashed_daemon",
                    reason: "coinmechd died of \(crash.signalName) in this link's \(place) at \(when); the mech stays inhibited until a reload with another plugin file or configuration for this link (consider `isolation: process`)")
                if let failure = quarantine.add(QuarantineRecord(link: link, problem: problem)) {
                    logger.error("cannot record the quarantine", metadata: ["error": "\(failure)"])
                }
                logger.critical("the last run died inside a plugin: link quarantined", metadata: [
                    "link": "\(link.name)", "plugin": "\(link.plugin)", "signal": "\(crash.signalName)", "where": "\(place)",
                ])
            } else {
                logger.critical("the last run died of \(crash.signalName) inside link #\(crash.index + 1) of chain generation \(crash.generation), no longer on record: nothing quarantined")
            }
        }
        let suspect = unattributedCrashProblem(breadcrumb?.lastRunOutsidePlugins, configuration, logger: logger)
        breadcrumb?.installCrashHandler()
        return ChainEnvironment(breadcrumb: breadcrumb, quarantine: quarantine, alarm: PluginAlarm(), log: pluginLog(logger),
                                report: linkReport(logger), isolation: configuration.plugins.supervision, suspectInProcess: suspect)
    }

    /// After `UnattributedCrashes.limit` deaths in a row that no breadcrumb explains: the problem
    /// every in-process link from outside the shipped set is quarantined with.
    static func unattributedCrashProblem(_ signal: Int32?, _ configuration: DaemonConfiguration, logger: Logger) -> LinkHealth.Problem? {
        let watch = UnattributedCrashes(stateDirectory: configuration.stateDirectory)
        let count = watch.record(lastRunDiedOutsidePlugins: signal != nil)
        guard let signal else { return nil }
        let name = PluginBreadcrumb.signalName(signal)
        logger.critical("the last run died of \(name) outside any plugin call: no link to blame (\(count) such deaths in a row; \(UnattributedCrashes.limit) quarantine the in-process links from outside the shipped set)")
        guard count >= UnattributedCrashes.limit else { return nil }
        watch.reset()
        return LinkHealth.Problem(
            state: .quarantined, cause: "unattributed_crashes",
            reason: "coinmechd died \(count) times in a row of crashes no link's breadcrumb explains (last: \(name)); a plugin run in process that corrupts memory crashes the daemon later, outside its own calls, so every in-process link from outside the shipped set is quarantined. The mech stays inhibited until a reload with another plugin file or configuration for this link: run it isolated (isolation: process)")
    }

    /// Plugins' own lines, in the daemon's log under the link's name.
    static func pluginLog(_ logger: Logger) -> PluginLogSink {
        { link, level, message in logger.log(level: level.loggerLevel, "plugin: \(message)", metadata: ["link": "\(link)"]) }
    }

    /// The daemon's lines about a link (a plugin host's crash, restart, quarantine).
    static func linkReport(_ logger: Logger) -> PluginLogSink {
        { link, level, message in logger.log(level: level.loggerLevel, "link \(link): \(message)", metadata: ["link": "\(link)"]) }
    }
}

extension PluginLogLevel {
    var loggerLevel: Logger.Level {
        switch self {
        case .error: .error
        case .warning: .warning
        case .info: .info
        case .debug: .debug
        }
    }
}
