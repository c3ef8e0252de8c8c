import CLinux
import Foundation

extension Thread {
    /// A started thread that names its system thread (what `top -H`, `ps -L` and
    /// /proc/PID/task/*/comm show) as its first act.
    ///
    /// Not Foundation's `name` setter: on Linux it names the system thread only once `start()`
    /// has stored the thread's handle, so a new thread that runs before its creator returns
    /// keeps the creator's name (about 3 in 100 here, more on a loaded machine); and set from
    /// outside, it never reaches the system thread at all.
    /// Linux keeps 15 bytes of a thread's name, so a longer name is cut to 15.
    @discardableResult
    public static func startNamed(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        let name = String(decoding: Array(name.utf8.prefix(15)), as: UTF8.self)
        let thread = Thread {
            _ = cm_name_this_thread(name)
            body()
        }
        thread.start()
        return thread
    }
}
