#if canImport(Glibc)
import Glibc
#endif

/// Makes a directory's entries durable: a file created or renamed into it survives a power cut
/// only once the directory itself is synced, not the file alone.
public enum DirectorySync {
    /// Opens `directory`, fsyncs it and closes it. False when it cannot be opened or synced; the
    /// callers go on (the file's own data is synced), so it returns rather than throws.
    @discardableResult
    public static func sync(_ directory: String) -> Bool {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return fsync(fd) == 0
    }
}
