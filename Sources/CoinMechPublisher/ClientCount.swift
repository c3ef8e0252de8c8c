import Synchronization

/// The client connections open now, counted as they are accepted and as they close.
final class ClientCount: Sendable {
    private let open = Atomic<Int>(0)

    /// Counts one more; returns how many are open with it.
    func opened() -> Int { open.add(1, ordering: .relaxed).newValue }

    func closed() { open.subtract(1, ordering: .relaxed) }

    var current: Int { open.load(ordering: .relaxed) }
}
