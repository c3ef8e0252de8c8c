import CoinMechChain
import Synchronization

/// The chain currently deciding. Readers take the snapshot under a lock for a few
/// nanoseconds; a reload swaps in a whole new chain. Readings already walking the old chain
/// finish on it: it stays alive as long as they hold it.
public final class ChainHolder: Sendable {
    private let chain: Mutex<Chain>
    /// Where replaced chains go to die: their plugins' destroy() must not run on the deciding
    /// thread (the threading contract), nor must an isolated link's host shutdown.
    private let retirement: ChainRetirement?
    /// Rung when a link's health changes; the deciding loop wakes on it.
    public let alarm: PluginAlarm

    public init(_ chain: Chain, retirement: ChainRetirement? = nil, alarm: PluginAlarm = PluginAlarm()) {
        self.chain = Mutex(chain)
        self.retirement = retirement
        self.alarm = alarm
    }

    public var current: Chain { chain.withLock { $0 } }

    /// Ends the retirement thread (chains it waits on that nobody holds are released first).
    /// The chain deciding now stays: its in-process plugins are not destroyed at exit, and its
    /// plugin hosts end with the daemon (they are killed when it goes, `PR_SET_PDEATHSIG`).
    /// Returns whether it ended within its time (a plugin's `destroy` may not return).
    @discardableResult
    public func stopRetiring() -> Bool { retirement?.stop() ?? true }

    /// Installs `new`; the chain it replaces is released by the retirement thread, if there is one.
    public func swap(_ new: Chain) {
        var previous: Chain? = chain.withLock { old in
            let previous = old
            old = new
            return previous
        }
        if let retirement, let taken = previous.take() { retirement.retire(taken) }
        previous = nil
    }
}
