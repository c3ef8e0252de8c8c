import CoinMechChain
import Synchronization

/// The chain currently deciding. Readers take the snapshot under a lock for a few
/// nanoseconds; a reload swaps in a whole new chain. Readings already walking the old chain
/// finish on it: it stays alive as long as they hold it.
public final class ChainHolder: Sendable {
    private let chain: Mutex<Chain>

    public init(_ chain: Chain) { self.chain = Mutex(chain) }

    public var current: Chain { chain.withLock { $0 } }

    /// Installs `new` and returns the chain it replaced.
    @discardableResult
    public func swap(_ new: Chain) -> Chain {
        chain.withLock { old in
            let previous = old
            old = new
            return previous
        }
    }
}
