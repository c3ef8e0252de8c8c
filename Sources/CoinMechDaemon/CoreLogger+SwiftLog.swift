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

// The core's seven levels are swift-log's, by name: one table, built once, serves both ways.
extension CoreLogger.Level {
    static let swiftLog: [Logger.Level] = allCases.map { level in
        guard let same = Logger.Level(rawValue: "\(level)") else { fatalError("swift-log has no level \(level)") }
        return same
    }

    init(_ level: Logger.Level) {
        self = Self.allCases[Self.swiftLog.firstIndex(of: level) ?? Self.allCases.count - 1]
    }
}

extension Logger.Level {
    init(_ level: CoreLogger.Level) { self = CoreLogger.Level.swiftLog[level.rawValue] }
}
