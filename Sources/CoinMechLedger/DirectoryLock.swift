#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// An exclusive `flock` on a directory, held until released: serialises the processes that
/// open the ledger in it while they set its schema up. Another holder is waited for, with a
/// line on standard error saying so, for at most `patience`; then opening fails naming it.
struct DirectoryLock {
    private let descriptor: Int32

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Opening takes milliseconds; a holder this long is stuck (a stopped process).
    static let patience: Duration = .seconds(30)

    init(_ directory: String) throws(Failure) {
        descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(description: "cannot open the directory \(directory) to lock it: \(Self.reason(errno))") }
        let clock = ContinuousClock()
        let deadline = clock.now + Self.patience
        var told = false
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK || code == EINTR else {
                close(descriptor)
                throw Failure(description: "cannot lock the directory \(directory): \(Self.reason(code))")
            }
            guard clock.now < deadline else {
                close(descriptor)
                throw Failure(description: "another process has held \(directory)'s open lock for \(Self.patience) (a stopped or hung process that opens the ledger: find it with `fuser \(directory)`)")
            }
            if !told {
                FileHandle.standardError.write(Data("ledger: another process is opening the ledger in \(directory); waiting for it\n".utf8))
                told = true
            }
            usleep(20_000)
        }
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// Unlocks it (closing the descriptor drops the lock).
    func release() {
        close(descriptor)
    }
}
