import CLinux

/// How the daemon asks glibc's malloc to behave.
public enum DaemonMemory {
    /// Call first thing in `main`. Blocks of 128 KiB or more (a plugin file read whole for its
    /// hash at start-up and at each reload, a page of history for a subscriber) are mapped on
    /// their own and returned when freed. glibc's default threshold starts there too but rises to
    /// the size of each large block freed, after which such blocks come from the heap and their
    /// pages stay resident: about 1.9 MiB of an idle daemon's anonymous memory.
    public static func tune() {
        _ = cm_malloc_mmap_threshold(128 * 1024)
    }
}
