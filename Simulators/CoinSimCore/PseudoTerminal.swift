#if canImport(Glibc)
import Glibc
#endif

/// A pseudo-terminal pair whose device end plays the mech's serial port.
///
/// The simulator keeps only the controlling (master) side open, so it can see whether a host
/// has the device open: while nobody does, the master reports a hang-up.
final class PseudoTerminal {
    let master: Int32
    /// Path of the device end, e.g. /dev/pts/4.
    let devicePath: String

    init() throws(SimulatorError) {
        var master: Int32 = -1, device: Int32 = -1
        guard openpty(&master, &device, nil, nil, nil) == 0 else { throw .system("openpty", errno) }
        // Raw 8N1 on the device end before any host opens it: no echo, no line editing.
        var settings = termios()
        tcgetattr(device, &settings)
        cfmakeraw(&settings)
        tcsetattr(device, TCSANOW, &settings)
        guard let name = ttyname(device) else {
            close(master)
            close(device)
            throw .system("ttyname", errno)
        }
        devicePath = String(cString: name)
        close(device)
        _ = fcntl(master, F_SETFD, FD_CLOEXEC)
        self.master = master
    }

    /// A device for a simulator's session: the trace opened first if `--record` asks for one,
    /// linked at `--link` if asked, its path added to the truth's connections and announced
    /// (coinsim prints it for the host).
    static func offer(_ options: SimulatorOptions, recorder: inout TraceWriter?, connections: inout GroundTruth.Connections,
                      announce: (String) -> Void) throws(SimulatorError) -> PseudoTerminal {
        if let path = options.recordPath { recorder = try TraceWriter(path: path) }
        let terminal = try PseudoTerminal()
        if let linkPath = options.linkPath { try terminal.link(at: linkPath) }
        connections.devicePaths.append(terminal.devicePath)
        announce(terminal.devicePath)
        return terminal
    }

    /// Points a symlink at the device end, replacing any old one atomically.
    func link(at path: String) throws(SimulatorError) {
        let temporary = "\(path).tmp.\(getpid())"
        unlink(temporary)
        guard symlink(devicePath, temporary) == 0 else { throw .system("symlink \(temporary)", errno) }
        guard rename(temporary, path) == 0 else { throw .system("rename \(path)", errno) }
    }

    /// Reads what the host wrote (up to 4 KiB); nil when nothing could be read.
    func read() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(master, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return Array(buffer[..<count])
    }

    /// Writes all of `bytes`, waiting while the host's input buffer is full.
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return false
            }
            offset += n
        }
        return true
    }

    deinit { close(master) }
}

/// Why the simulator stopped with an error.
public enum SimulatorError: Error, CustomStringConvertible, Sendable {
    case system(String, Int32)
    case trace(String)

    public var description: String {
        switch self {
        case .system(let call, let code): "\(call): \(String(cString: strerror(code)))"
        case .trace(let message): "trace: \(message)"
        }
    }
}
