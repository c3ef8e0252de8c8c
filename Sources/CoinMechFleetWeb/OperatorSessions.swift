import Foundation
import Synchronization

/// Who is logged in: a random token (the cookie) to an operator's name, for eight hours. The
/// role is not kept here: it is read for each request (`SessionMiddleware`). Kept in memory: a
/// restart of the fleet logs everyone out, which costs a login, not money.
public final class OperatorSessions: Sendable {
    public struct Session: Sendable, Equatable {
        public var name: String
        public var expires: Double
    }

    public static let lifetime = 8 * 3600.0
    private let sessions = Mutex<[String: Session]>([:])

    public init() {}

    /// A new session's token: 32 bytes from the system's secure generator, as hex.
    public func open(name: String, now: Double) -> String {
        var generator = SystemRandomNumberGenerator()
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        sessions.withLock { table in
            table = table.filter { $0.value.expires > now }
            table[token] = Session(name: name, expires: now + Self.lifetime)
        }
        return token
    }

    public func session(_ token: String?, now: Double) -> Session? {
        guard let token else { return nil }
        return sessions.withLock { table in
            guard let found = table[token], found.expires > now else { return nil }
            return found
        }
    }

    public func close(_ token: String?) {
        guard let token else { return }
        _ = sessions.withLock { $0.removeValue(forKey: token) }
    }
}
