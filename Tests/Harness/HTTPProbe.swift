import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// HTTP/1.1 over a plain socket on loopback, one request per connection (chunked bodies joined): enough to see statuses,
/// headers and cookies as a browser would get them, without following redirects. For the tests
/// of the bridge's `/metrics` and of the fleet's dashboard.
public struct HTTPProbe {
    public let port: Int
    /// The loopback address requests come from (127.0.0.1 when nil).
    public let source: String?
    /// How long a read may wait for the server (Prometheus gives a scrape 10 s by default).
    public let timeoutSeconds: Int
    public init(port: Int, from source: String? = nil, timeoutSeconds: Int = 30) {
        self.port = port
        self.source = source
        self.timeoutSeconds = timeoutSeconds
    }

    public struct Response {
        public var status: Int
        public var headers: [(String, String)]
        public var body: String
        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }
        /// The session cookie's `name=value`.
        public var cookie: String? { header("set-cookie")?.split(separator: ";").first.map(String.init) }
    }

    public func request(_ method: String, _ path: String, form: String? = nil, cookie: String? = nil, headers extra: [(String, String)] = []) throws -> Response {
        guard let fd = Loopback.connect(port, from: source) else { throw HTTPProbeError("nothing listens on 127.0.0.1:\(port)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let cookie { text += "Cookie: \(cookie)\r\n" }
        for (name, value) in extra { text += "\(name): \(value)\r\n" }
        if let form { text += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(form.utf8.count)\r\n" }
        text += "\r\n" + (form ?? "")
        let bytes = Array(text.utf8)
        guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw HTTPProbeError("cannot send the request") }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        let response = String(decoding: received, as: UTF8.self)
        guard let split = response.range(of: "\r\n\r\n") else { throw HTTPProbeError("no HTTP response: \(response.prefix(200))") }
        let lines = response[..<split.lowerBound].split(separator: "\r\n")
        guard let first = lines.first, let status = Int(first.split(separator: " ").dropFirst().first ?? "") else { throw HTTPProbeError("bad status line") }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body = String(response[split.upperBound...])
        if headers.contains(where: { $0.0.lowercased() == "transfer-encoding" && $0.1.lowercased() == "chunked" }) { body = Self.unchunk(body) }
        return Response(status: status, headers: headers, body: body)
    }

    /// A chunked body's chunks joined (sizes in hex, each line ended by CR LF, a last chunk of 0).
    static func unchunk(_ text: String) -> String {
        var bytes = Substring(text).utf8[...]
        var out: [UInt8] = []
        while let lineEnd = bytes.firstRange(of: "\r\n".utf8) {
            let sizeText = String(decoding: bytes[..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size > 0 else { break }
            let start = lineEnd.upperBound
            guard let end = bytes.index(start, offsetBy: size, limitedBy: bytes.endIndex) else { break }
            out += bytes[start..<end]
            bytes = bytes[end...].dropFirst(2)
        }
        return String(decoding: out, as: UTF8.self)
    }
}

public struct HTTPProbeError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
