import Foundation

extension Thread {
    /// A started thread that names itself. On Linux, Foundation gives `name` to the system
    /// thread (what `top -H`, `ps -L` and /proc/PID/task/*/comm show) only when the thread
    /// itself sets it; set from outside, every thread kept the name of the one that created it
    /// (a Dispatch worker's "com.apple.root.default-qos", truncated).
    /// Linux keeps 15 bytes of a thread's name and refuses a longer one (the system thread would
    /// keep its creator's), so a longer `name` is cut to 15 bytes.
    @discardableResult
    public static func startNamed(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        let name = String(decoding: Array(name.utf8.prefix(15)), as: UTF8.self)
        let thread = Thread {
            Thread.current.name = name
            body()
        }
        // Not `thread.name = name` here as well: the setter ignores a name the thread already has.
        thread.start()
        return thread
    }
}
