import CLinux
import CoinMechPluginABI
import CoinMechSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Levels of a plugin's log lines (`coinmech_log_level`).
public enum PluginLogLevel: UInt32, Sendable, CustomStringConvertible {
    case error = 0, warning = 1, info = 2, debug = 3

    public var description: String {
        switch self {
        case .error: "error"
        case .warning: "warning"
        case .info: "info"
        case .debug: "debug"
        }
    }
}

/// Where plugins' log lines go: the daemon's log, under the link's name.
public typealias PluginLogSink = @Sendable (_ link: String, _ level: PluginLogLevel, _ message: String) -> Void

public enum PluginLog {
    /// Lines on standard error, for tools without a logger.
    public static let standardError: PluginLogSink = { link, level, message in
        let line = "plugin \(link): \(level): \(message)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }
    /// Lines dropped (tests and benches that do not care).
    public static let discard: PluginLogSink = { _, _, _ in }
}

/// The services one instance gets at create (`coinmech_host`): its name, a log under that
/// name, the monotonic clock.
public final class HostServices: @unchecked Sendable {
    // @unchecked: `raw` and `name` are written once here and freed in deinit, which runs only
    // after the instance's destroy() returned (its PluginInstance or plugin host holds this
    // object); `log` may be called from any thread and touches only the Mutex-guarded limit.
    let raw: UnsafeMutablePointer<coinmech_host>
    private let name: UnsafeMutablePointer<CChar>
    public let instanceName: String
    private let sink: PluginLogSink
    private let limit = Mutex(LogRateLimit())

    public init(instanceName: String, sink: @escaping PluginLogSink) {
        self.instanceName = instanceName
        self.sink = sink
        name = strdup(instanceName)
        raw = .allocate(capacity: 1)
        raw.initialize(to: coinmech_host())
        raw.pointee.size = UInt32(MemoryLayout<coinmech_host>.size)
        raw.pointee.abi_version = PluginABI.hostVersion
        raw.pointee.instance_name = UnsafePointer(name)
        raw.pointee.log = { context, level, message in
            guard let context, let message else { return }
            Unmanaged<HostServices>.fromOpaque(context).takeUnretainedValue().log(level: level, message: String(cString: message))
        }
        raw.pointee.monotonic_ns = { _ in cm_monotonic_ns() }
        raw.pointee.context = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        raw.deallocate()
        free(name)
    }

    /// What the plugin's `coinmech_log` calls: rate-limited, then to the sink.
    public func log(level: UInt32, message: String) {
        let (pass, dropped) = limit.withLock { $0.admit(now: cm_monotonic_ns()) }
        guard pass else { return }
        let level = PluginLogLevel(rawValue: min(level, 3)) ?? .debug
        sink(instanceName, level, dropped > 0 ? "\(message) (\(dropped) earlier lines dropped: too many)" : message)
    }

    public var pointer: UnsafePointer<coinmech_host> { UnsafePointer(raw) }
}
