import CoinMechPluginABI

/// The host's services as a Swift plugin sees them: the link's name, a log that ends up in the
/// daemon's log under that name, and the monotonic clock. Valid until the instance is freed.
public struct PluginHost {
    @usableFromInline let services: UnsafePointer<coinmech_host>?

    public init(_ services: UnsafePointer<coinmech_host>?) { self.services = services }

    /// The link's name in the chain ("usd"); empty when the host gave none.
    public var instanceName: String {
        guard let services, has(\.instance_name), let name = services.pointee.instance_name else { return "" }
        return String(cString: name)
    }

    /// A line in the daemon's log. The host rate-limits it; keep it off the common path.
    public func log(_ level: coinmech_log_level, _ message: String) {
        guard let services else { return }
        message.withCString { coinmech_log(services, level, $0) }
    }

    /// The same from a NUL-terminated buffer, for a plugin that must not allocate where it logs.
    public func log(_ level: coinmech_log_level, cString message: UnsafePointer<CChar>) {
        guard let services else { return }
        coinmech_log(services, level, message)
    }

    /// CLOCK_MONOTONIC in nanoseconds, as the host reads it (0 when the host gives no clock).
    public var monotonicNanoseconds: UInt64 {
        guard let services, has(\.monotonic_ns), let clock = services.pointee.monotonic_ns else { return 0 }
        return clock(services.pointee.context)
    }

    private func has<T>(_ field: KeyPath<coinmech_host, T>) -> Bool {
        guard let services, let offset = MemoryLayout<coinmech_host>.offset(of: field) else { return false }
        return Int(services.pointee.size) >= offset + MemoryLayout<T>.size
    }
}
