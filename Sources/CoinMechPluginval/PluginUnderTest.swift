import CLinux
import CoinMechChain
import CoinMechPluginABI
import CoinMechPlugins
import Foundation

/// The plugin as a check sees it, in the check's own child process: mapped from a private copy
/// with `RTLD_NOW | RTLD_LOCAL`, its entry called as the daemon calls it, and every call made
/// through buffers with guard bytes behind them, so writing past a size is seen.
final class PluginUnderTest: @unchecked Sendable {
    // @unchecked: the checks call one plugin from several threads on purpose (the threading
    // contract is what they test); everything here is set once, except `liveServices`, which
    // `lock` guards.
    let path: String
    let api: coinmech_plugin
    let metadata: PluginMetadata
    let entry: coinmech_plugin_entry_fn
    /// The plugin's log lines, as the host would get them.
    let log = LogBook()

    /// A check failed: what the plugin did wrong, for the report.
    struct Finding: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// What the validator found out about one call of validate.
    struct Call {
        var decision: coinmech_decision
        /// Bytes written past the decision size the host gave.
        var wrotePastSize: Bool
        /// Bytes written into the part of a newer host's bigger struct the plugin cannot know.
        var wroteUnknownFields: Bool
    }

    init(path: String) throws(Finding) {
        self.path = path
        // A copy of its own, so the file can be rebuilt while the check runs.
        let copy = "\(NSTemporaryDirectory())/coinmech-pluginval-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).so"
        guard (try? FileManager.default.copyItem(atPath: path, toPath: copy)) != nil else { throw Finding("cannot copy \(path) to \(copy)") }
        defer { unlink(copy) }
        guard let handle = dlopen(copy, RTLD_NOW | RTLD_LOCAL) else {
            throw Finding("dlopen(RTLD_NOW) failed: \(dlerror().map { String(cString: $0) } ?? "unknown error") (every symbol must resolve at load)")
        }
        guard let symbol = dlsym(handle, COINMECH_PLUGIN_ENTRY_SYMBOL) else { throw Finding("no entry symbol 'coinmech_plugin_entry': not a CoinMech plugin") }
        entry = unsafeBitCast(symbol, to: coinmech_plugin_entry_fn.self)
        do throws(PluginLoadError) {
            (api, metadata) = try PluginHandshake.perform(entry, path: path)
        } catch {
            throw Finding("\(error)")
        }
    }

    // MARK: Instances

    /// Creates an instance with host services under the name "pluginval", as the daemon does.
    /// Returns the instance, or the plugin's error message (checked for a NUL within the room it had).
    func create(_ config: String, errorRoom: Int = 1024) throws(Finding) -> UnsafeMutableRawPointer {
        switch tryCreate(config, errorRoom: errorRoom) {
        case .success(let instance): return instance
        case .failure(let message): throw Finding("create refused the configuration: \(message) (give one with --config)")
        }
    }

    enum Created {
        case success(UnsafeMutableRawPointer)
        case failure(String)
    }

    /// Creates; a refusal must leave a NUL-terminated message inside `errorRoom` bytes and touch
    /// nothing behind them.
    func tryCreate(_ config: String, errorRoom: Int = 1024) -> Created {
        let services = HostServices(instanceName: "pluginval") { [log] _, level, message in log.add(level, message) }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: errorRoom + 64)
        defer { buffer.deallocate() }
        buffer.initialize(repeating: CChar(bitPattern: 0xAB), count: errorRoom + 64)
        let instance = config.withCString { api.create!(services.pointer, $0, buffer, errorRoom) }
        let overflow = (errorRoom..<(errorRoom + 64)).contains { buffer[$0] != CChar(bitPattern: 0xAB) }
        if let instance {
            lock.lock()
            liveServices[instance] = services
            lock.unlock()
            return overflow ? .failure("wrote past the error buffer while succeeding") : .success(instance)
        }
        if overflow { return .failure("wrote past the \(errorRoom) bytes of the error buffer") }
        guard let end = (0..<errorRoom).first(where: { buffer[$0] == 0 }) else { return .failure("the error message is not NUL-terminated within \(errorRoom) bytes") }
        return .failure(String(decoding: (0..<end).map { UInt8(bitPattern: buffer[$0]) }, as: UTF8.self))
    }

    /// Each live instance's host services: a plugin may use them until destroy returns.
    private var liveServices: [UnsafeMutableRawPointer: HostServices] = [:]
    private let lock = NSLock()

    func destroy(_ instance: UnsafeMutableRawPointer) {
        api.destroy!(instance)
        lock.lock()
        liveServices[instance] = nil
        lock.unlock()
    }

    /// Validates `reading`; `readingTail` and `decisionTail` make the structs as large as a
    /// newer host's (the plugin must ignore what it does not know, and write nothing there).
    func validate(_ instance: UnsafeMutableRawPointer, _ reading: Reading, readingTail: Int = 0, decisionTail: Int = 0) -> Call {
        let decisionSize = MemoryLayout<coinmech_decision>.size + decisionTail
        let decisionBuffer = UnsafeMutableRawPointer.allocate(byteCount: decisionSize + 64, alignment: 16)
        defer { decisionBuffer.deallocate() }
        decisionBuffer.initializeMemory(as: UInt8.self, repeating: 0, count: decisionSize)
        (decisionBuffer + decisionSize).initializeMemory(as: UInt8.self, repeating: 0xAB, count: 64)
        decisionBuffer.storeBytes(of: UInt32(decisionSize), as: UInt32.self)
        let readingSize = MemoryLayout<coinmech_reading>.size + readingTail
        let readingBuffer = UnsafeMutableRawPointer.allocate(byteCount: readingSize, alignment: 16)
        defer { readingBuffer.deallocate() }
        (readingBuffer + MemoryLayout<coinmech_reading>.size).initializeMemory(as: UInt8.self, repeating: 0xCD, count: readingTail)
        reading.withCReading { raw in
            readingBuffer.copyMemory(from: raw, byteCount: MemoryLayout<coinmech_reading>.size)
        }
        readingBuffer.storeBytes(of: UInt32(readingSize), as: UInt32.self)
        api.validate!(instance, readingBuffer.assumingMemoryBound(to: coinmech_reading.self), decisionBuffer.assumingMemoryBound(to: coinmech_decision.self))
        let past = UnsafeRawBufferPointer(start: decisionBuffer + decisionSize, count: 64).contains { $0 != 0xAB }
        let unknown = UnsafeRawBufferPointer(start: decisionBuffer + MemoryLayout<coinmech_decision>.size, count: decisionTail).contains { $0 != 0 }
        var decision = decisionBuffer.load(as: coinmech_decision.self)
        decision.size = UInt32(MemoryLayout<coinmech_decision>.size)
        return Call(decision: decision, wrotePastSize: past, wroteUnknownFields: unknown)
    }

    /// Validates `reading` in a struct of only `size` bytes (an older host's) that ends where
    /// readable memory ends: a plugin that reads past the size it was given faults here.
    func validate(_ instance: UnsafeMutableRawPointer, _ reading: Reading, endingAtPageWith size: Int) -> Call {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let base = mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)!
        defer { munmap(base, 2 * page) }
        mprotect(base + page, page, PROT_NONE)
        let start = base + page - size
        reading.withCReading { raw in start.copyMemory(from: raw, byteCount: size) }
        start.storeBytes(of: UInt32(size), as: UInt32.self)
        var decision = coinmech_decision()
        decision.size = UInt32(MemoryLayout<coinmech_decision>.size)
        api.validate!(instance, start.assumingMemoryBound(to: coinmech_reading.self), &decision)
        return Call(decision: decision, wrotePastSize: false, wroteUnknownFields: false)
    }

    /// A describe-like function's text, checked as the host reads it: asked first with a small
    /// buffer (it must say how much it needs, NUL-terminate what fits and write nothing past it).
    func text(_ write: (UnsafeMutablePointer<CChar>, Int) -> Int) throws(Finding) -> String {
        let small = UnsafeMutablePointer<CChar>.allocate(capacity: 8 + 64)
        defer { small.deallocate() }
        small.initialize(repeating: CChar(bitPattern: 0xAB), count: 8 + 64)
        let needed = write(small, 8)
        guard (8..<72).allSatisfy({ small[$0] == CChar(bitPattern: 0xAB) }) else { throw Finding("wrote past an 8-byte buffer") }
        guard (0..<8).contains(where: { small[$0] == 0 }) else { throw Finding("did not NUL-terminate within an 8-byte buffer") }
        let room = needed + 1
        let full = UnsafeMutablePointer<CChar>.allocate(capacity: room + 64)
        defer { full.deallocate() }
        full.initialize(repeating: CChar(bitPattern: 0xAB), count: room + 64)
        let again = write(full, room)
        guard again == needed else { throw Finding("said it needs \(needed) bytes, then \(again)") }
        guard (room..<(room + 64)).allSatisfy({ full[$0] == CChar(bitPattern: 0xAB) }) else { throw Finding("wrote past the \(room) bytes it asked for") }
        guard full[needed] == 0 else { throw Finding("the text is not NUL-terminated where its length says") }
        return String(cString: full)
    }
}

/// The plugin's first log lines, from any thread (bounded: the lifecycle check measures the
/// heap, and a plugin that logs at every create must not look like a leak).
final class LogBook: @unchecked Sendable {
    // @unchecked: `lines` is guarded by `lock`.
    private let lock = NSLock()
    private var lines: [(PluginLogLevel, String)] = []

    func add(_ level: PluginLogLevel, _ message: String) {
        lock.lock()
        defer { lock.unlock() }
        if lines.count < 64 { lines.append((level, message)) }
    }

    var all: [(PluginLogLevel, String)] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }
}
