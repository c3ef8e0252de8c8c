@testable import CoinMechCore
@testable import CoinMechDaemon
import Logging
import Testing

@Suite("The core's log levels and swift-log's: the same seven, by name, both ways")
struct CoreLoggerTests {
    @Test("each level maps to the one of its name and back")
    func levels() {
        #expect(CoreLogger.Level.allCases.count == Logger.Level.allCases.count)
        for level in CoreLogger.Level.allCases {
            #expect(Logger.Level(level).rawValue == "\(level)")
            #expect(CoreLogger.Level(Logger.Level(level)) == level)
        }
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        #expect(CoreLogger(logger).level == .warning)
    }
}
