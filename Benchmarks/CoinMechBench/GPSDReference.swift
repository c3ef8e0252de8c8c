import ArgumentParser
import CoinMechHarness
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// gpsd measured on this machine in the same run as the daemon: a sentence written to a pty
/// that gpsd reads, relayed to a client on its socket (`?WATCH={"nmea":true}`), paced like the
/// steady phase. Its p50 is the reference the answer's p50 is held to (with one fsync), as the
/// fastest open daemon of this kind on the same path. Nil when gpsd is not installed.
struct GPSDReference {
    static let executable = "/usr/sbin/gpsd"

    /// Microseconds from the write at the device to the line at the client, one per sentence.
    static func measure(samples: Int, interval: Double) throws -> [Int]? {
        guard FileManager.default.isExecutableFile(atPath: executable) else { return nil }
        var master: Int32 = -1, device: Int32 = -1
        guard openpty(&master, &device, nil, nil, nil) == 0 else { throw ValidationError("openpty failed") }
        defer {
            close(master)
            close(device)
        }
        var settings = termios()
        tcgetattr(device, &settings)
        cfmakeraw(&settings)
        tcsetattr(device, TCSANOW, &settings)
        guard let name = ttyname(device) else { throw ValidationError("ttyname failed") }
        let port = 20_000 + Int(getpid() % 20_000)
        let gpsd = Process()
        gpsd.executableURL = URL(fileURLWithPath: executable)
        // Foreground, no wait for a client before reading the device, read-only, our own port.
        gpsd.arguments = ["-N", "-n", "-b", "-S", "\(port)", String(cString: name)]
        gpsd.standardError = FileHandle(forWritingAtPath: "/dev/null")
        gpsd.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        try gpsd.run()
        defer {
            gpsd.terminate()
            gpsd.waitUntilExit()
        }
        let client = try connect(port: port)
        defer { close(client) }
        let watch = Array("?WATCH={\"enable\":true,\"nmea\":true};\n".utf8)
        _ = write(client, watch, watch.count)

        var lines = LineReader(fd: client)
        var results: [Int] = []
        results.reserveCapacity(samples)
        // gpsd recognises NMEA from the first sentences; the first few are not timed.
        for index in 0..<(samples + 20) {
            usleep(useconds_t(interval * 1e6))
            let sentence = Self.sentence(index)
            let start = DispatchTime.now().uptimeNanoseconds
            _ = write(master, sentence.bytes, sentence.bytes.count)
            guard lines.waitFor(sentence.marker, timeoutMilliseconds: index < 20 ? 300 : 2000) else {
                if index < 20 { continue }
                throw ValidationError("gpsd did not relay sentence \(index) within 2 s")
            }
            if index >= 20 { results.append(Int((DispatchTime.now().uptimeNanoseconds - start) / 1000)) }
        }
        return results
    }

    /// A GGA sentence whose time field (HHMMSS.ss) numbers it, with its checksum.
    private static func sentence(_ index: Int) -> (bytes: [UInt8], marker: String) {
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let time = two(index / 360_000 % 24) + two(index / 6000 % 60) + two(index / 100 % 60) + "." + two(index % 100)
        let body = "GPGGA,\(time),4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"
        let checksum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        let hex = Array("0123456789ABCDEF")
        return (Array("$\(body)*\(hex[Int(checksum >> 4)])\(hex[Int(checksum & 0x0F)])\r\n".utf8), "GPGGA,\(time),")
    }

    private static func connect(port: Int) throws -> Int32 {
        let deadline = Date().addingTimeInterval(10)
        while true {
            if let fd = Loopback.connect(port) { return fd }
            guard Date() < deadline else { throw ValidationError("gpsd did not listen on port \(port) within 10 s") }
            usleep(20_000)
        }
    }

    /// Lines from gpsd's socket, as bytes: gpsd ends them with CR LF, which a Swift `String`
    /// holds as one character.
    private struct LineReader {
        let fd: Int32
        var pending: [UInt8] = []

        /// Reads until a line containing `marker` has arrived; false if `timeoutMilliseconds` pass first.
        mutating func waitFor(_ marker: String, timeoutMilliseconds: Int32) -> Bool {
            let wanted = Array(marker.utf8)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = pending[..<end]
                    pending.removeSubrange(...end)
                    if line.count >= wanted.count, (0...(line.count - wanted.count)).contains(where: { line.dropFirst($0).starts(with: wanted) }) {
                        return true
                    }
                }
                var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&waiting, 1, timeoutMilliseconds) == 1 else { return false }
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { return false }
                pending += buffer[..<count]
            }
        }
    }
}
