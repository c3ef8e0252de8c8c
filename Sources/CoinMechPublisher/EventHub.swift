import CoinMechLedger
import CoinMechModel
import NIOCore
import Synchronization

/// Hands committed ledger events to every subscribed client, in `seq` order.
///
/// `publish` only enqueues work on each client's event loop: a client that does not read can
/// never slow the caller (the deciding loop) down. Each client keeps its own bounded queue.
public final class EventHub: Sendable {
    private let subscribers = Mutex<[ObjectIdentifier: Subscriber]>([:])

    struct Subscriber: Sendable {
        let eventLoop: any EventLoop
        let deliver: @Sendable ([LedgerEvent]) -> Void
    }

    public init() {}

    /// Called by the single ledger writer after each commit, with the events in `seq` order.
    public func publish(_ events: [LedgerEvent]) {
        guard !events.isEmpty else { return }
        for subscriber in subscribers.withLock({ Array($0.values) }) {
            subscriber.eventLoop.execute { subscriber.deliver(events) }
        }
    }

    public var count: Int { subscribers.withLock { $0.count } }

    func register(_ id: ObjectIdentifier, _ subscriber: Subscriber) {
        subscribers.withLock { $0[id] = subscriber }
    }

    func unregister(_ id: ObjectIdentifier) {
        _ = subscribers.withLock { $0.removeValue(forKey: id) }
    }
}
