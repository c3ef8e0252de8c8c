#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on a directory, held until released: serialises the processes that
/// open the ledger in it while they set its schema up. Blocks until it is free.
struct DirectoryLock {
    private let descriptor: Int32

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(_ directory: String) throws(Failure) {
        descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(description: "cannot open the directory \(directory) to lock it: \(String(cString: strerror(errno)))") }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                let why = String(cString: strerror(errno))
                close(descriptor)
                throw Failure(description: "cannot lock the directory \(directory): \(why)")
            }
        }
    }

    /// Unlocks it (closing the descriptor drops the lock).
    func release() {
        close(descriptor)
    }
}
