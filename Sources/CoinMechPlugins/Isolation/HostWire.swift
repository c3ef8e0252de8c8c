import CoinMechChain
import CoinMechPluginABI
import Foundation

/// The messages between coinmechd and a `coinmech-plugin-host`, one per SOCK_SEQPACKET packet.
/// Both ends come from the same build: the structs travel as their bytes.
///
///     daemon → host   load      header, protocol, link name, configuration, file name; the plugin file's descriptor attached
///     host → daemon   ready     header, protocol, the plugin's metadata and its describe() text
///                     failed    header, the load error as JSON
///     daemon → host   validate  header (id), coinmech_reading, source name
///     host → daemon   decision  header (id), coinmech_decision
///                     log       header, level, text (any time)
///                     violation header, the forbidden system call's number and architecture
///                               (sent by the host's SIGSYS handler, just before it exits)
///
/// The host exits when the daemon closes the channel, after destroying the instance.
public enum HostWire {
    /// Bumped whenever a message changes: a host from another build is refused, not misread.
    public static let protocolVersion: UInt32 = 3
    /// Largest message (a load with a big configuration, a ready with a long description).
    public static let maximumMessage = 192 * 1024
    /// The descriptor the host finds its channel on.
    public static let channelDescriptor: Int32 = 3

    public enum Kind: UInt32, Sendable {
        case load = 1, ready, failed, validate, decision, log, violation
    }

    /// 16 bytes in front of every message.
    public struct Header: Sendable {
        public var kind: UInt32
        public var reserved: UInt32 = 0
        public var id: UInt64

        public init(_ kind: Kind, id: UInt64 = 0) {
            self.kind = kind.rawValue
            self.id = id
        }
    }

    /// A validate request: fixed size, written in place on the deciding path.
    public struct Validate {
        public var header: Header
        public var reading: coinmech_reading
        public var source: SourceName

        public init(id: UInt64, reading: coinmech_reading, source: SourceName) {
            header = Header(.validate, id: id)
            self.reading = reading
            self.reading.source = nil
            self.source = source
        }
    }

    /// A decision: fixed size.
    public struct Decided {
        public var header: Header
        public var decision: coinmech_decision

        public init(id: UInt64, decision: coinmech_decision) {
            header = Header(.decision, id: id)
            self.decision = decision
        }
    }

    /// What a load carries besides the descriptor.
    public struct Load: Sendable, Codable, Hashable {
        public var protocolVersion: UInt32
        public var link: String
        public var configJSON: String
        /// The installed file's path, for messages.
        public var sourcePath: String
        public var sha256: String
        public var usesSwift: Bool
        public var sandbox: SandboxPolicy

        public init(link: String, configJSON: String, file: PluginFile, sandbox: SandboxPolicy) {
            protocolVersion = HostWire.protocolVersion
            self.link = link
            self.configJSON = configJSON
            sourcePath = file.sourcePath
            sha256 = file.sha256
            usesSwift = file.usesSwift
            self.sandbox = sandbox
        }
    }

    /// What a ready carries.
    public struct Ready: Sendable, Codable, Hashable {
        public var protocolVersion: UInt32
        public var metadata: PluginMetadata
        public var description: String?
        public var sandbox: SandboxReport

        public init(metadata: PluginMetadata, description: String?, sandbox: SandboxReport) {
            protocolVersion = HostWire.protocolVersion
            self.metadata = metadata
            self.description = description
            self.sandbox = sandbox
        }
    }

    // MARK: Encoding

    /// A header followed by a JSON body (the messages that are not on the deciding path).
    public static func encode(_ kind: Kind, _ body: some Encodable) -> [UInt8] {
        var bytes = withUnsafeBytes(of: Header(kind)) { Array($0) }
        bytes += (try? JSONEncoder().encode(body)).map(Array.init) ?? []
        return bytes
    }

    /// A log line: header, level, text (cut at 1 KiB).
    public static func log(level: PluginLogLevel, _ message: String) -> [UInt8] {
        var bytes = withUnsafeBytes(of: Header(.log)) { Array($0) }
        bytes += withUnsafeBytes(of: level.rawValue) { Array($0) }
        bytes += Array(message.utf8.prefix(1024))
        return bytes
    }

    /// The kind and id of a received message, if it has a header of a known kind.
    public static func header(of message: UnsafeRawBufferPointer) -> (kind: Kind, id: UInt64)? {
        guard message.count >= MemoryLayout<Header>.size else { return nil }
        let header = message.loadUnaligned(as: Header.self)
        return Kind(rawValue: header.kind).map { ($0, header.id) }
    }

    /// The JSON body after the header.
    public static func body<T: Decodable>(_ type: T.Type, of message: UnsafeRawBufferPointer) -> T? {
        guard message.count >= MemoryLayout<Header>.size else { return nil }
        return try? JSONDecoder().decode(T.self, from: Data(message[MemoryLayout<Header>.size...]))
    }

    /// A violation's system call (number, audit architecture), if `message` is one.
    public static func violation(of message: UnsafeRawBufferPointer) -> (syscall: Int32, arch: UInt32)? {
        guard message.count >= MemoryLayout<Header>.size + 8, header(of: message)?.kind == .violation else { return nil }
        return (message.loadUnaligned(fromByteOffset: MemoryLayout<Header>.size, as: Int32.self),
                message.loadUnaligned(fromByteOffset: MemoryLayout<Header>.size + 4, as: UInt32.self))
    }

    /// A log message's level and text.
    public static func logLine(of message: UnsafeRawBufferPointer) -> (PluginLogLevel, String)? {
        let start = MemoryLayout<Header>.size + MemoryLayout<UInt32>.size
        guard message.count >= start else { return nil }
        let level = message.loadUnaligned(fromByteOffset: MemoryLayout<Header>.size, as: UInt32.self)
        return (PluginLogLevel(rawValue: min(level, 3)) ?? .debug, String(decoding: message[start...], as: UTF8.self))
    }
}


