import CoinMechChain
import CoinMechSupport
import Foundation
import Synchronization

/// A thread that releases replaced chains once nobody else holds them, so their plugins'
/// destroy() and their plugin hosts' shutdown run here, never on the deciding thread.
public final class ChainRetirement: Sendable {
    private let pending = Mutex<[Chain]>([])
    private let arrived = DispatchSemaphore(value: 0)

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
        }
    }

    /// Hands `chain` over; it is released here once the caller and everyone else let go of it.
    public func retire(_ chain: Chain) {
        pending.withLock { $0.append(chain) }
        arrived.signal()
    }
}
