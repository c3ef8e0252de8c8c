import CLinux

#if canImport(Glibc)
import Glibc
#endif

/// Why a serial device could not be used.
public enum SerialPortError: Error, Sendable, Equatable, CustomStringConvertible {
    case open(path: String, errno: Int32)
    case busy(path: String)
    case configure(path: String, what: String, errno: Int32)
    case unsupportedBaud(Int)

    public var description: String {
        switch self {
        case .open(let path, let code): "\(path): cannot open: \(String(cString: strerror(code)))"
        case .busy(let path): "\(path): in exclusive use by another process"
        case .configure(let path, let what, let code): "\(path): \(what): \(String(cString: strerror(code)))"
        case .unsupportedBaud(let baud): "baud \(baud) is not supported (use 1200, 2400, 4800, 9600, 19200, 38400, 57600 or 115200)"
        }
    }
}

/// An open serial device: raw 8N1 at a fixed baud rate, exclusive, non-blocking.
public final class SerialPort {
    public let path: String
    public let descriptor: Int32

    public static let supportedBauds: [Int: speed_t] = [
        1200: speed_t(B1200), 2400: speed_t(B2400), 4800: speed_t(B4800), 9600: speed_t(B9600),
        19200: speed_t(B19200), 38400: speed_t(B38400), 57600: speed_t(B57600), 115200: speed_t(B115200),
    ]

    /// Opens `path` (`O_NOCTTY`, non-blocking), takes it exclusively (`TIOCEXCL`), sets raw 8N1
    /// at `baud`, and discards input that was waiting: readings older than the mech's deadline
    /// were already returned by the mech and must not be decided.
    public init(path: String, baud: Int) throws(SerialPortError) {
        guard let speed = Self.supportedBauds[baud] else { throw .unsupportedBaud(baud) }
        let fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .open(path: path, errno: errno) }
        self.path = path
        descriptor = fd
        // From here on, deinit closes the descriptor if configuring fails.
        if cm_tty_exclusive(fd) != 0 {
            if errno == EBUSY { throw .busy(path: path) }
            if errno != ENOTTY { throw .configure(path: path, what: "TIOCEXCL", errno: errno) }
        }
        var settings = termios()
        guard tcgetattr(fd, &settings) == 0 else { throw .configure(path: path, what: "not a terminal device", errno: errno) }
        cfmakeraw(&settings)
        settings.c_cflag |= tcflag_t(CLOCAL | CREAD)
        settings.c_cflag &= ~(tcflag_t(CSTOPB) | tcflag_t(PARENB) | tcflag_t(CRTSCTS))
        withUnsafeMutableBytes(of: &settings.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        cfsetispeed(&settings, speed)
        cfsetospeed(&settings, speed)
        guard tcsetattr(fd, TCSANOW, &settings) == 0 else { throw .configure(path: path, what: "tcsetattr", errno: errno) }
        tcflush(fd, TCIFLUSH)
    }

    deinit { close(descriptor) }

    /// What `read` found.
    public enum ReadResult {
        case bytes([UInt8])
        case nothing
        /// The device went away (EIO, end of file): close it and reconnect.
        case hangUp(reason: String)
    }

    /// Reads what is waiting, without blocking.
    public func read(max: Int = 4096) -> ReadResult {
        // Read straight into the array's storage: no zero-filled buffer and no copy per read.
        var count = 0, failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: max) { buffer, initialized in
            count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0 { failure = errno }
            initialized = Swift.max(0, count)
        }
        if count > 0 { return .bytes(bytes) }
        // With VMIN = 0 a tty read returns 0 when nothing is waiting; a hang-up shows as EIO
        // (or POLLHUP, which the caller checks).
        if count == 0 { return .nothing }
        switch failure {
        case EAGAIN, EINTR: return .nothing
        default: return .hangUp(reason: String(cString: strerror(failure)))
        }
    }

    /// Writes all of `bytes`, waiting up to `timeoutMilliseconds` for room. False if it could not.
    public func write(_ bytes: [UInt8], timeoutMilliseconds: Int32 = 20) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if n > 0 {
                offset += n
                continue
            }
            guard n < 0, errno == EAGAIN || errno == EINTR else { return false }
            var waiting = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            guard poll(&waiting, 1, timeoutMilliseconds) > 0 else { return false }
        }
        return true
    }
}
