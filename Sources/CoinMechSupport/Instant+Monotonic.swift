import CLinux
import CoinMechModel

extension Instant {
    /// Now, on CLOCK_MONOTONIC. Here and not with `Instant`: reading the kernel's clock is I/O,
    /// and the vocabulary (and so the deciding core) never reads a clock.
    public static var now: Instant { Instant(nanoseconds: cm_monotonic_ns()) }
}
