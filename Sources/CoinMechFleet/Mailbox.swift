import Synchronization

/// Values handed from child tasks to the loop that owns the state they change: posted by the
/// tasks, taken (all at once, in order) by the loop at its next turn.
final class Mailbox<Value: Sendable>: Sendable {
    private let box = Mutex<[Value]>([])

    func post(_ value: Value) { box.withLock { $0.append(value) } }

    func take() -> [Value] { box.withLock { box in defer { box.removeAll() }; return box } }

    var isEmpty: Bool { box.withLock { $0.isEmpty } }
}
