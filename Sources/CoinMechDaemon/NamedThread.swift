import Foundation

extension Thread {
    /// A started thread that names itself. On Linux, Foundation gives `name` to the system
    /// thread (what `top -H`, `ps -L` and /proc/PID/task/*/comm show) only when the thread
    /// itself sets it; set from outside, every thread kept the name of the one that created it
    /// (a Dispatch worker's "com.apple.root.default-qos", truncated).
    /// `name` must fit Linux's 15 bytes, or the system thread keeps its creator's name.
    static func startNamed(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        let thread = Thread {
            Thread.current.name = name
            body()
        }
        // Not `thread.name = name` here as well: the setter ignores a name the thread already has.
        thread.start()
        return thread
    }
}
