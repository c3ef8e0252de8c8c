import CoinMechCore
import Logging

extension CoreLogger {
    /// The core's lines into a swift-log `Logger` (the journal), at the logger's level.
    public init(_ logger: Logger) {
        self.init(level: Level(logger.logLevel)) { level, message, metadata in
            logger.log(level: Logger.Level(level), "\(message)", metadata: metadata.mapValues { .string($0) })
        }
    }
}

extension CoreLogger.Level {
    init(_ level: Logger.Level) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }
}

extension Logger.Level {
    init(_ level: CoreLogger.Level) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }
}
