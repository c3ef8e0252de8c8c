import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The fleet's way to PostgreSQL: a postgres-nio pool, every call on it held to a deadline, and
/// a new pool when a call stalls.
///
/// Why: postgres-nio 1.33 writes each query to its channel without a write promise
/// (`PostgresConnection.query`: `channel.write(…, promise: nil)`). When the server closes a
/// connection between two statements of a transaction (a fast shutdown ends a session that is
/// idle in its transaction with FATAL 57P01), the channel's handlers are gone before the next
/// statement is written: the write fails at the channel's head, and nothing ever completes the
/// query's own promise. That await never resumes and cannot be cancelled, and the pool counts
/// the dead connection as leased for good, so it opens no other: the ingest stored nothing more,
/// logged nothing and ignored SIGTERM. Every call here has a deadline; one that passes it is
/// left behind, its pool with it, and the next call goes to a new pool.
public final class FleetDatabase: Sendable {
    let configuration: PostgresClient.Configuration
    let logger: Logger
    /// How long a call may take: a statement, the wait for a connection, the rows.
    public let deadline: Double
    /// Calls left behind at their deadline and not yet answered: each holds a task, its
    /// captures and a lease of a pool left behind. Beyond `maxStranded`, the process is not
    /// healthy any more (its watchdog says so).
    public static let maxStranded = 16

    private struct Pool: Sendable {
        var client: PostgresClient
        var generation: Int
        var running: Task<Void, Never>
    }

    private let state: Mutex<(pool: Pool, stranded: Int, stalls: Int, stopped: Bool)>

    public init(configuration: PostgresClient.Configuration, deadline: Double, logger: Logger) {
        self.configuration = configuration
        self.deadline = deadline
        self.logger = logger
        state = Mutex((Self.start(configuration, generation: 1, logger: logger), 0, 0, false))
    }

    private static func start(_ configuration: PostgresClient.Configuration, generation: Int, logger: Logger) -> Pool {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        // Its own task, not a child of the service group: a pool that cannot finish (a lease
        // that is never returned) must not hold the fleet's stop.
        return Pool(client: client, generation: generation, running: Task { await client.run() })
    }

    /// Calls left behind at their deadline and still suspended.
    public var stranded: Int { state.withLock { $0.stranded } }
    /// Calls that passed their deadline since the start.
    public var stalls: Int { state.withLock { $0.stalls } }

    /// `body` on the current pool, within the deadline. A call that passes it throws
    /// `DeadlinePassed` (the caller tries again) and retires the pool it ran on.
    public func call<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        let pool = state.withLock { $0.pool }
        let finished = Atomic<Bool>(false)
        do {
            return try await withinDeadline(deadline, "the database (\(what))") {
                defer {
                    // Answered after all: no longer stranded.
                    if finished.exchange(true, ordering: .acquiringAndReleasing) { self.state.withLock { $0.stranded -= 1 } }
                }
                return try await body(pool.client)
            }
        } catch let passed as DeadlinePassed {
            if !finished.exchange(true, ordering: .acquiringAndReleasing) { state.withLock { $0.stranded += 1 } }
            retire(pool.generation, because: passed)
            throw passed
        }
    }

    /// A new pool in place of `generation`, unless another call has made one already.
    private func retire(_ generation: Int, because passed: DeadlinePassed) {
        let old = state.withLock { state -> Pool? in
            state.stalls += 1
            guard !state.stopped, state.pool.generation == generation else { return nil }
            let old = state.pool
            state.pool = Self.start(configuration, generation: generation + 1, logger: logger)
            return old
        }
        guard let old else { return }
        logger.error("\(passed): its connections are given up and a new pool opened (\(stranded) call(s) still stranded)")
        // Its connections closed; a lease it can never get back may keep its task for good.
        old.running.cancel()
    }

    /// Stops the pools without waiting for one that cannot finish (the service group's
    /// shutdown, or the end of a one-shot command).
    public func shutdown() {
        let pool = state.withLock { state -> Pool in
            state.stopped = true
            return state.pool
        }
        pool.running.cancel()
    }
}
