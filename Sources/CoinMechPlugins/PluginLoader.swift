import CoinMechPluginABI

#if canImport(Glibc)
import Glibc
#endif

/// Finds plugin files, checks who may write them, and loads each version from a private,
/// content-addressed copy with `dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)`.
///
/// Swift images are never unloaded: the Swift runtime keeps pointers into every image it has
/// seen, so `dlclose` of a Swift plugin would crash the host later. They are opened with
/// `RTLD_NODELETE`. A plain C image (one that does not link the Swift runtime) is opened
/// without it and closed when the last instance made from it is gone.
public struct PluginLoader: Sendable {
    /// Where plugin files are looked up by name.
    public var directory: String
    /// Private directory for the content-addressed copies (created 0700 if missing, with a
    /// `plugins/` inside). It must allow executable mappings: not a `noexec` mount such as
    /// `/run` on many systems.
    public var runtimeDirectory: String
    /// Owners a plugin file and its directory may have: root and the daemon's user.
    public var trustedOwners: Set<uid_t>

    public init(directory: String, runtimeDirectory: String, trustedOwners: Set<uid_t> = [0, geteuid()]) {
        self.directory = directory
        self.runtimeDirectory = runtimeDirectory
        self.trustedOwners = trustedOwners
    }

    /// The file of plugin `name`: `<directory>/lib<name>.so`, else `<directory>/<name>.so`.
    public func path(forPlugin name: String) throws(PluginLoadError) -> String {
        let candidates = ["\(directory)/lib\(name).so", "\(directory)/\(name).so"]
        guard let found = candidates.first(where: { access($0, F_OK) == 0 }) else {
            throw .notFound(name: name, tried: candidates)
        }
        return found
    }

    /// Loads plugin `name` from the plugin directory.
    public func load(plugin name: String) throws(PluginLoadError) -> PluginImage {
        try load(path: try path(forPlugin: name))
    }

    /// Loads the plugin file at `path`.
    public func load(path: String) throws(PluginLoadError) -> PluginImage {
        try Self.image(of: try prepare(path: path))
    }

    /// Checks plugin `name`'s file and makes its private copy, without loading it.
    public func prepare(plugin name: String) throws(PluginLoadError) -> PluginFile {
        try prepare(path: try path(forPlugin: name))
    }

    /// Checks the file at `path` (who may write it, that it is ELF) and makes its private,
    /// content-addressed copy. Nothing of it runs.
    public func prepare(path: String) throws(PluginLoadError) -> PluginFile {
        try FileTrust(trustedOwners: trustedOwners).check(file: path)
        let bytes = try Self.readFile(path)
        guard bytes.starts(with: [0x7F, 0x45, 0x4C, 0x46]) else { throw .notSharedObject(path: path) }
        let sha256 = SHA256.hex(bytes)
        let copy = try privateCopy(of: path, bytes: bytes, sha256: sha256)
        return PluginFile(sourcePath: path, copyPath: copy, sha256: sha256, usesSwift: Self.linksSwiftRuntime(bytes))
    }

    /// Maps a prepared file with `dlopen(RTLD_NOW | RTLD_LOCAL)` (and `RTLD_NODELETE` for a Swift
    /// image) and performs the handshake; a refused C image is closed again.
    public static func image(of file: PluginFile) throws(PluginLoadError) -> PluginImage {
        let path = file.sourcePath
        guard let handle = dlopen(file.copyPath, RTLD_NOW | RTLD_LOCAL | (file.usesSwift ? RTLD_NODELETE : 0)) else {
            throw .dlopenFailed(path: path, message: dlerror().map { String(cString: $0) } ?? "unknown error")
        }
        // From here on, a refused C image is closed again; a Swift image stays (it must).
        var accepted = false
        defer { if !accepted && !file.usesSwift { dlclose(handle) } }
        guard let symbol = dlsym(handle, COINMECH_PLUGIN_ENTRY_SYMBOL) else {
            throw .missingEntrySymbol(path: path)
        }
        let (api, metadata) = try PluginHandshake.perform(unsafeBitCast(symbol, to: coinmech_plugin_entry_fn.self), path: path)
        accepted = true
        return PluginImage(file: file, api: api, metadata: metadata, handle: handle)
    }

    /// Whether an ELF image needs the Swift runtime: its dynamic section names `libswiftCore.so`.
    /// (Every shared object SwiftPM builds does, even from C.)
    static func linksSwiftRuntime(_ bytes: [UInt8]) -> Bool {
        let needle = Array("libswiftCore.so".utf8)
        guard bytes.count >= needle.count else { return false }
        var index = 0
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0], bytes[index..<(index + needle.count)].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }

    /// Removes the private copies whose content is not in `sha256s`, and half-written copies a
    /// crash left behind; returns the names removed. Each deployed plugin version leaves a copy,
    /// so a daemon calls this once it runs its first chain, or the directory only grows.
    /// A copy still mapped by a process stays valid: the mapping keeps the file's inode.
    public func pruneCopies(keeping sha256s: Set<String>) -> [String] {
        let directory = "\(runtimeDirectory)/plugins"
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var removed: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            let halfWritten = name.contains(".so.tmp.")
            guard halfWritten || name.hasSuffix(".so") else { continue }
            if !halfWritten {
                // `<stem>-<sha256>.so`: keep it if its content is in use, or if it is not a copy.
                let stem = name.dropLast(3)
                guard let dash = stem.lastIndex(of: "-") else { continue }
                let sha = stem[stem.index(after: dash)...]
                guard sha.count == 64, sha.allSatisfy(\.isHexDigit), !sha256s.contains(String(sha)) else { continue }
            }
            if unlink("\(directory)/\(name)") == 0 { removed.append(name) }
        }
        return removed.sorted()
    }

    /// Writes `<runtime>/plugins/<stem>-<sha256>.so` once (by rename, so never half-written).
    private func privateCopy(of path: String, bytes: [UInt8], sha256: String) throws(PluginLoadError) -> String {
        let directory = "\(runtimeDirectory)/plugins"
        for dir in [runtimeDirectory, directory] where mkdir(dir, 0o700) != 0 && errno != EEXIST {
            throw .copyFailed(path: path, reason: "mkdir \(dir): \(String(cString: strerror(errno)))")
        }
        var stem = String(path.split(separator: "/").last ?? "plugin")
        if stem.hasSuffix(".so") { stem.removeLast(3) }
        let target = "\(directory)/\(stem)-\(sha256).so"
        if access(target, R_OK) == 0 { return target }

        let temporary = "\(target).tmp.\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o500)
        guard fd >= 0 else { throw .copyFailed(path: path, reason: "\(temporary): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(fd) == 0, rename(temporary, target) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .copyFailed(path: path, reason: reason)
        }
        return target
    }

    static func readFile(_ path: String) throws(PluginLoadError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
        }
    }
}
