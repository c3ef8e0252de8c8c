import Foundation
import PostgresNIO

extension FleetStore {
    /// The instance's listening clock and the last word of each cabinet it heard (B1a), as
    /// saved by its earlier runs. A cabinet last heard by another instance (the sites were
    /// partitioned again) is counted from its promise, as one never heard.
    public func loadHearing(instance: String) async throws -> CabinetHearing {
        return try await database.call("loadHearing") { client in
            var listened = 0.0
            for try await value in try await client.query("SELECT listened FROM listening WHERE instance = \(instance)", logger: logger).decode(Double.self) {
                listened = value
            }
            var heard: [String: CabinetHearing.Heard] = [:]
            let rows = try await client.query("SELECT cabinet, heard_at, heard_listened FROM hearing WHERE instance = \(instance)", logger: logger)
            for try await (cabinet, at, listenedThen) in rows.decode((String, Double, Double).self) {
                // Never ahead of the clock it was written on, whatever a restore left.
                heard[cabinet] = .init(at: at, listened: min(listenedThen, listened))
            }
            return CabinetHearing(listened: listened, heard: heard)
        }
    }

    /// The clock and the cabinets heard since the last save, in one transaction.
    public func saveHearing(instance: String, listened: Double, heard: [String: CabinetHearing.Heard]) async throws {
        try await database.call("saveHearing") { client in
            let cabinets = Array(heard.keys), at = cabinets.map { heard[$0]!.at }, then = cabinets.map { heard[$0]!.listened }
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("""
                    INSERT INTO listening (instance, listened) VALUES (\(instance), \(listened))
                    ON CONFLICT (instance) DO UPDATE SET listened = greatest(listening.listened, excluded.listened)
                    """, logger: logger)
                guard !cabinets.isEmpty else { return }
                try await connection.query("""
                    INSERT INTO hearing (cabinet, instance, heard_at, heard_listened)
                    SELECT c, \(instance), a, l FROM unnest(\(cabinets)::text[], \(at)::float8[], \(then)::float8[]) AS t(c, a, l)
                    ON CONFLICT (cabinet) DO UPDATE SET instance = excluded.instance, heard_at = excluded.heard_at, heard_listened = excluded.heard_listened
                    """, logger: logger)
            }
        }
    }
}
