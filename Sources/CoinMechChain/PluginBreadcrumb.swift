import CLinux

#if canImport(Glibc)
import Glibc
#endif

/// Which plugin code a thread is in, kept where a crash cannot erase it: a file in the state
/// directory, mapped shared (`cm_breadcrumb.h`). The deciding thread stores one word before each
/// link call, a store and not a syscall; a fatal signal copies the word into the file; the next
/// start reads it (`lastRun`) and quarantines the link instead of crashing again.
public final class PluginBreadcrumb: @unchecked Sendable {
    // @unchecked: the mapping is never unmapped (a signal handler may write to it at any moment).
    // Tables are written by one chain builder at a time, before the chain they describe decides;
    // the deciding slot is written by the deciding thread only.
    private let file: UnsafeMutablePointer<cm_crumb_file>
    /// What crashed the daemon's last run inside plugin code, if anything did.
    public let lastRun: CrashRecord?
    /// The fatal signal the last run died of outside any plugin call, if it did: no link to
    /// blame, though a plugin that corrupted the heap earlier can crash the daemon that way.
    public let lastRunOutsidePlugins: Int32?
    public let path: String
    /// The deciding thread's hang timer (`cm_hang_timer_create`): `Chain` arms it with each
    /// in-process link's budget, and the hang watch sleeps on it.
    public let hangTimer: Int32

    /// Where in plugin code: a link call's phase.
    public enum Phase: UInt64, Sendable, CustomStringConvertible {
        case validate = 1, create = 2, destroy = 3, describe = 4

        public var description: String {
            switch self {
            case .validate: "validate"
            case .create: "create"
            case .destroy: "destroy"
            case .describe: "describe"
            }
        }
    }

    /// A crash inside plugin code, as the last run's breadcrumb tells it.
    public struct CrashRecord: Sendable, Hashable {
        /// The link, if its generation's table was still in the file.
        public var link: LinkIdentity?
        public var generation: UInt64
        public var index: Int
        public var phase: Phase?
        public var signal: Int32
        /// Seconds since 1970.
        public var time: Double

        /// "SIGSEGV" for people.
        public var signalName: String { PluginBreadcrumb.signalName(signal) }
    }

    /// Maps `<stateDirectory>/plugin-breadcrumb`, reading what the last run left.
    public init(stateDirectory: String) throws(BreadcrumbError) {
        path = "\(stateDirectory)/plugin-breadcrumb"
        // On the heap: 70 KB is too much for a thread's stack.
        let previous = UnsafeMutablePointer<cm_crumb_file>.allocate(capacity: 1)
        defer { previous.deallocate() }
        guard let mapped = cm_crumb_map(path, previous) else {
            throw BreadcrumbError(path: path, reason: String(cString: strerror(errno)))
        }
        let timer = cm_hang_timer_create()
        guard timer >= 0 else { throw BreadcrumbError(path: path, reason: "cannot create the hang timer: \(String(cString: strerror(errno)))") }
        hangTimer = timer
        file = mapped
        lastRun = Self.crash(in: previous)
        lastRunOutsidePlugins = previous.pointee.magic == CM_CRUMB_MAGIC && previous.pointee.crash_signal == 0 && previous.pointee.outside_signal != 0
            ? previous.pointee.outside_signal : nil
    }

    deinit { close(hangTimer) }

    /// Records fatal signals in this file from now on. Once per process (the daemon's).
    public func installCrashHandler() { cm_crumb_install(file) }

    /// Call on the deciding thread before it decides anything.
    public static func bindDecidingThread() { cm_crumb_bind_deciding_thread() }

    /// The deciding thread's slot, which `Chain` writes on every link call.
    public var decidingSlot: UnsafeMutablePointer<cm_crumb_slot> {
        UnsafeMutableRawPointer(file).advanced(by: MemoryLayout<cm_crumb_file>.offset(of: \.deciding)!)
            .assumingMemoryBound(to: cm_crumb_slot.self)
    }

    /// Says what link `index` of chain `generation` is, before any of its code runs.
    public func record(generation: UInt64, index: Int, link: LinkIdentity) {
        guard index < Int(CM_CRUMB_LINKS) else { return }
        let tables = UnsafeMutableRawPointer(file).advanced(by: MemoryLayout<cm_crumb_file>.offset(of: \.tables)!)
            .assumingMemoryBound(to: cm_crumb_table.self)
        let table = tables + Int(generation % UInt64(CM_CRUMB_TABLES))
        if table.pointee.generation != generation {
            table.pointee.generation = generation
            table.pointee.count = 0
        }
        table.pointee.count = max(table.pointee.count, UInt32(index + 1))
        let entry = UnsafeMutableRawPointer(table).advanced(by: MemoryLayout<cm_crumb_table>.offset(of: \.links)!)
            .assumingMemoryBound(to: cm_crumb_link.self) + index
        entry.pointee = cm_crumb_link()
        Self.copy(link.name, into: &entry.pointee.name)
        Self.copy(link.plugin, into: &entry.pointee.plugin)
        Self.copy(link.sha256, into: &entry.pointee.sha256)
        Self.copy(link.configSHA256, into: &entry.pointee.config_sha256)
        entry.pointee.budget_ns = link.budgetNanoseconds
    }

    /// The link table of `generation`, if the ring still holds it.
    public func link(generation: UInt64, index: Int) -> LinkIdentity? {
        Self.link(in: UnsafePointer(file), generation: generation, index: index)
    }

    /// A link's place: chain generation and index.
    public struct Site: Sendable, Hashable {
        public var generation: UInt64
        public var index: Int

        public init(generation: UInt64, index: Int) {
            self.generation = generation
            self.index = index
        }
    }

    /// Runs `body` marked, on this thread, as inside the link at `site` in `phase` (unmarked
    /// without a site). For create, describe and destroy; validate is marked by the chain.
    public static func around<T, E: Error>(_ site: Site?, phase: Phase, _ body: () throws(E) -> T) throws(E) -> T {
        guard let site else { return try body() }
        cm_crumb_enter(word(generation: site.generation, index: site.index, phase: phase))
        defer { cm_crumb_leave() }
        return try body()
    }

    // MARK: Words

    /// `generation` (24 bits) · walk (24 bits) · index + 1 (12 bits) · phase (4 bits).
    @inline(__always)
    public static func word(generation: UInt64, index: Int, phase: Phase) -> UInt64 {
        (generation & 0xFF_FFFF) << 40 | (UInt64(index + 1) & 0xFFF) << 4 | phase.rawValue
    }

    @inline(__always)
    static func walkBits(_ walk: UInt64) -> UInt64 { (walk & 0xFF_FFFF) << 16 }

    /// (generation mod 2^24, index, phase) of a word; nil for 0 (outside plugin code).
    public static func decode(_ word: UInt64) -> (generation: UInt64, index: Int, phase: Phase?)? {
        guard word != 0 else { return nil }
        return (word >> 40, Int((word >> 4) & 0xFFF) - 1, Phase(rawValue: word & 0xF))
    }

    // MARK: Reading the file

    private static func crash(in previous: UnsafePointer<cm_crumb_file>) -> CrashRecord? {
        guard previous.pointee.magic == CM_CRUMB_MAGIC, previous.pointee.crash_signal != 0,
              let decoded = decode(previous.pointee.crash_word) else { return nil }
        return CrashRecord(link: link(in: previous, generation: decoded.generation, index: decoded.index), generation: decoded.generation,
                           index: decoded.index, phase: decoded.phase, signal: previous.pointee.crash_signal,
                           time: Double(previous.pointee.crash_realtime_ns) / 1e9)
    }

    /// Reads through pointers: the file is 70 KB, too much to copy onto a thread's stack.
    private static func link(in file: UnsafePointer<cm_crumb_file>, generation: UInt64, index: Int) -> LinkIdentity? {
        guard index >= 0, index < Int(CM_CRUMB_LINKS) else { return nil }
        let tables = UnsafeRawPointer(file).advanced(by: MemoryLayout<cm_crumb_file>.offset(of: \.tables)!)
            .assumingMemoryBound(to: cm_crumb_table.self)
        for slot in 0..<Int(CM_CRUMB_TABLES) {
            let table = tables + slot
            guard table.pointee.generation != 0, table.pointee.generation & 0xFF_FFFF == generation & 0xFF_FFFF,
                  index < Int(table.pointee.count) else { continue }
            let entry = UnsafeRawPointer(table).advanced(by: MemoryLayout<cm_crumb_table>.offset(of: \.links)!)
                .assumingMemoryBound(to: cm_crumb_link.self) + index
            return LinkIdentity(name: string(entry.pointee.name), plugin: string(entry.pointee.plugin), sha256: string(entry.pointee.sha256),
                                configSHA256: string(entry.pointee.config_sha256), budgetNanoseconds: entry.pointee.budget_ns)
        }
        return nil
    }

    private static func copy<T>(_ text: String, into field: inout T) {
        withUnsafeMutableBytes(of: &field) { bytes in
            let utf8 = Array(text.utf8.prefix(bytes.count - 1))
            bytes.copyBytes(from: utf8)
            bytes[utf8.count] = 0
        }
    }

    private static func string<T>(_ field: T) -> String {
        withUnsafeBytes(of: field) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }

    /// "SIGSEGV" for people.
    public static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGSEGV: "SIGSEGV"
        case SIGBUS: "SIGBUS"
        case SIGILL: "SIGILL"
        case SIGFPE: "SIGFPE"
        case SIGABRT: "SIGABRT"
        case SIGTRAP: "SIGTRAP"
        case SIGSYS: "SIGSYS"
        case SIGKILL: "SIGKILL"
        case SIGTERM: "SIGTERM"
        default: "signal \(signal)"
        }
    }
}

/// Which link, by what it is made of: its name, its plugin file and its configuration. A
/// quarantine holds as long as all three stay the same.
public struct LinkIdentity: Sendable, Hashable, Codable {
    public var name: String
    public var plugin: String
    /// SHA-256 of the plugin file.
    public var sha256: String
    /// SHA-256 of the link's configuration, isolation and budget.
    public var configSHA256: String
    public var budgetNanoseconds: UInt64

    public init(name: String, plugin: String, sha256: String, configSHA256: String, budgetNanoseconds: UInt64) {
        self.name = name
        self.plugin = plugin
        self.sha256 = sha256
        self.configSHA256 = configSHA256
        self.budgetNanoseconds = budgetNanoseconds
    }
}

/// The breadcrumb file could not be made or mapped.
public struct BreadcrumbError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "\(path): cannot map the plugin breadcrumb: \(reason)" }
}
