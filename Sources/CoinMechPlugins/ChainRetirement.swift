import CoinMechChain
import CoinMechSupport
import Foundation
import Synchronization

/// A thread that releases replaced chains once nobody else holds them, so their plugins'
/// destroy() and their plugin hosts' shutdown run here, never on the deciding thread.
public final class ChainRetirement: Sendable {
    private let pending = Mutex<[Chain]>([])
    private let stopping = Atomic<Bool>(false)
    private let arrived = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    public init() {
        _ = Thread.startNamed("retirement") { [self] in run() }
    }

    private func run() {
        var held: [Chain] = []
        while true {
            // Chains someone still uses (a reading in flight, a status request) are looked at
            // again shortly; the deciding loop holds one only for a batch.
            _ = arrived.wait(timeout: held.isEmpty ? .distantFuture : .now() + 0.05)
            held += pending.withLock { chains in
                defer { chains.removeAll() }
                return chains
            }
            var index = held.count - 1
            while index >= 0 {
                if isKnownUniquelyReferenced(&held[index]) { held.remove(at: index) }  // destroyed here
                index -= 1
            }
            // Stopping: what nobody holds any more is released above; a chain still held by
            // someone is released by its last holder.
            if stopping.load(ordering: .acquiring) { break }
        }
        finished.signal()
    }

    /// Hands `chain` over; it is released here once the caller and everyone else let go of it.
    /// After `stop`, it is released by whoever lets go of it last (the caller, at once).
    public func retire(_ chain: Chain) {
        guard !stopping.load(ordering: .acquiring) else { return }
        pending.withLock { $0.append(chain) }
        arrived.signal()
    }

    /// Releases what it holds that nobody else does and ends the thread. Waits at most
    /// `timeout` seconds: a plugin's `destroy` that never returns must not hold up a stop.
    /// Returns whether the thread ended in time.
    @discardableResult
    public func stop(timeout: Double = 5) -> Bool {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return true }
        arrived.signal()
        return finished.wait(timeout: .now() + timeout) == .success
    }
}
