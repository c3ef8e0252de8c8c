/// Where the core's log lines go. The core depends on nothing but the vocabulary, so it does not
/// take swift-log's `Logger`: its shell hands it a sink that forwards to one (the daemon's
/// `CoreLogger(_:)`), and tests a sink that keeps or drops the lines. As with swift-log, a
/// line below `level` costs one comparison: its message and metadata are never built.
public struct CoreLogger: Sendable {
    /// swift-log's levels, in its order.
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public typealias Sink = @Sendable (Level, String, [String: String]) -> Void

    /// The lowest level passed to the sink.
    public let level: Level
    private let sink: Sink

    public init(level: Level, sink: @escaping Sink) {
        self.level = level
        self.sink = sink
    }

    /// Drops every line.
    public static let discarding = CoreLogger(level: .critical) { _, _, _ in }

    @inlinable
    public func log(_ at: Level, _ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        if at >= level { emit(at, message(), metadata()) }
    }

    @usableFromInline
    func emit(_ at: Level, _ message: String, _ metadata: [String: String]) { sink(at, message, metadata) }

    @inlinable
    public func debug(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.debug, message(), metadata: metadata())
    }

    @inlinable
    public func info(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.info, message(), metadata: metadata())
    }

    @inlinable
    public func notice(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.notice, message(), metadata: metadata())
    }

    @inlinable
    public func warning(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.warning, message(), metadata: metadata())
    }

    @inlinable
    public func error(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.error, message(), metadata: metadata())
    }

    @inlinable
    public func critical(_ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.critical, message(), metadata: metadata())
    }
}
