import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Admits the commands that cost the deciding thread (`explain` and the control commands) at a
/// bounded rate for every client together. A client whose command finds no token waits for one
/// (its connection reads nothing meanwhile): an `explain` flood from one client, or from many,
/// takes a few dozen of the loop's microseconds a second, never the mech's deadline.
public final class CommandGate: Sendable {
    private let bucket: Mutex<TokenBucket>

    public init(burst: Int, perSecond: Double) {
        bucket = Mutex(TokenBucket(burst: burst, perSecond: perSecond))
    }

    /// Runs `admitted` on `eventLoop` once a token is taken: at once if one is there.
    func admit(on eventLoop: any EventLoop, _ admitted: @escaping @Sendable () -> Void) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let wait = bucket.withLock { $0.take(at: UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)) }
        guard let wait else { return admitted() }
        eventLoop.scheduleTask(in: .nanoseconds(Int64(clamping: wait))) { [self] in admit(on: eventLoop, admitted) }
    }
}
