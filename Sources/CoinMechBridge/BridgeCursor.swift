import CoinMechProtocol
import CoinMechSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The bridge's cursor on disk (docs/FLEET.md, B8): the highest seq the consumer acked,
/// written atomically (a temporary file in the same directory, fsync, rename, fsync of the
/// directory), so a crash leaves the old cursor or the new one, never a torn one.
///
///     {"v":1,"cabinet":"c-0042","acked":1201,"time":1795290001.4}
public struct BridgeCursor: Sendable {
    public let path: String
    public let cabinet: String

    public init(directory: String, cabinet: String) {
        path = "\(directory)/cursor.json"
        self.cabinet = cabinet
    }

    /// What the file says; 0 when there is none. A file of another cabinet, or one that is not
    /// a cursor, counts as none, with the reason.
    public func read() -> (acked: Int64, warning: String?) {
        guard let data = FileManager.default.contents(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            return (0, exists ? "\(path) cannot be read (\(String(cString: strerror(EACCES)))?): starting from the retained ack, or seq 1" : nil)
        }
        guard let json = JSON.parse(String(decoding: data, as: UTF8.self)), json["v"]?.int == 1, let acked = json["acked"]?.int, acked >= 0 else {
            return (0, "\(path) is not a cursor file: starting from the retained ack, or seq 1")
        }
        guard json["cabinet"]?.string == cabinet else {
            return (0, "\(path) is the cursor of cabinet '\(json["cabinet"]?.string ?? "?")', not '\(cabinet)': ignored")
        }
        return (acked, nil)
    }

    /// Writes `acked`; the error says what failed.
    public func write(_ acked: Int64, time: Double) throws(BridgeError) {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = "\(path).tmp"
        let text: JSON = ["v": 1, "cabinet": .string(cabinet), "acked": .int(acked), "time": .double((time * 10).rounded() / 10)]
        let bytes = Array((text.description + "\n").utf8)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cursor(path: temporary, "cannot create: \(String(cString: strerror(errno)))") }
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced else { throw .cursor(path: temporary, "cannot write and sync: \(String(cString: strerror(errno)))") }
        guard rename(temporary, path) == 0 else { throw .cursor(path: path, "cannot rename into place: \(String(cString: strerror(errno)))") }
        DirectorySync.sync(directory)
    }
}
