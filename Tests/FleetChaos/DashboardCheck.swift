import CoinMechHarness
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The dashboard in headless Chromium (Debian's): an operator logs in through the login form,
/// then each page is loaded, saved as a screenshot for people to look at, and its DOM read for
/// the figures, which must equal the fleet's sums of the ledgers' events. Any message on the
/// browser's console (a script error, a resource that failed) fails the check.
struct DashboardCheck {
    let bin: String
    let dir: String
    let configuration: String
    let port: Int
    let screenshots: String

    static let chromium = "/usr/bin/chromium"

    /// Returns the pages checked and the problems found (printed).
    func run(cabinets: [(name: String, cashBox: [String: Int64], credited: Int)]) throws -> (pages: Int, errors: Int) {
        guard FileManager.default.fileExists(atPath: Self.chromium) else { throw FleetChaosError("\(Self.chromium) not found: scripts/bootstrap installs chromium") }
        try FileManager.default.createDirectory(atPath: screenshots, withIntermediateDirectories: true)
        let password = "chaos-\(UInt64.random(in: 1...UInt64.max))"
        try password.write(toFile: "\(dir)/password", atomically: true, encoding: .utf8)
        let made = try ChildProcess(path: "\(bin)/coinmech-fleet", ["set-operator", "alice", "--role", "admin", "--password-file", "\(dir)/password", "--config", configuration],
                                    stderrPath: "\(dir)/set-operator.log")
        guard made.wait(timeout: 60) == 0 else { throw FleetChaosError("coinmech-fleet set-operator failed: see \(dir)/set-operator.log") }
        // The login form of the dashboard, filled and posted as a person would; the session
        // cookie lands in the profile the later loads share.
        try """
            <!DOCTYPE html><html><body><form method="post" action="http://127.0.0.1:\(port)/login">
            <input name="name" value="alice"><input name="password" value="\(password)"><input name="next" value="/"></form>
            <script>document.forms[0].submit()</script></body></html>
            """.write(toFile: "\(dir)/login.html", atomically: true, encoding: .utf8)
        var errors = 0, pages = 0
        let landing = try chrome(["--dump-dom", "file://\(dir)/login.html"], log: "login").dom
        if !landing.contains("data-cabinet=") {
            print("DASHBOARD: logging in through the form did not reach the fleet page:\n\(landing.prefix(400))")
            errors += 1
        }
        var targets: [(path: String, file: String)] = [("/", "fleet")]
        for cabinet in cabinets { targets.append(("/cabinet/\(cabinet.name)", "cabinet-\(cabinet.name)")) }
        for target in targets {
            let url = "http://127.0.0.1:\(port)\(target.path)"
            let shot = try chrome(["--screenshot=\(screenshots)/\(target.file).png", "--window-size=1280,1600", url], log: target.file + "-shot")
            let page = try chrome(["--dump-dom", url], log: target.file)
            pages += 1
            for line in (shot.console + page.console) {
                print("DASHBOARD: \(target.path): console: \(line)")
                errors += 1
            }
            if !FileManager.default.fileExists(atPath: "\(screenshots)/\(target.file).png") {
                print("DASHBOARD: \(target.path): no screenshot")
                errors += 1
            }
            for cabinet in cabinets where target.path == "/" || target.path == "/cabinet/\(cabinet.name)" {
                let expected = cabinet.cashBox.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ";")
                if Self.attribute("data-cash-box", after: "data-cabinet=\"\(cabinet.name)\"", in: page.dom) != expected {
                    print("DASHBOARD: \(target.path): cabinet \(cabinet.name)'s cash box is not \(expected) (the ledgers' events)")
                    errors += 1
                }
                if target.path != "/" {
                    let lifetime = Self.attribute("data-lifetime", after: "data-counter=\"credited\"", in: page.dom)
                    if lifetime != "\(cabinet.credited)" {
                        print("DASHBOARD: \(target.path): credited lifetime \(lifetime ?? "absent"), the ledger's coin events \(cabinet.credited)")
                        errors += 1
                    }
                }
            }
        }
        return (pages, errors)
    }

    /// The value of the first `name="…"` after `anchor`.
    static func attribute(_ name: String, after anchor: String, in text: String) -> String? {
        guard let start = text.range(of: anchor) else { return nil }
        guard let found = text[start.upperBound...].range(of: "\(name)=\"") else { return nil }
        let rest = text[found.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }

    /// One headless Chromium run on the shared profile: its standard output (the DOM for
    /// `--dump-dom`), and the console's messages from its log.
    private func chrome(_ arguments: [String], log: String) throws -> (dom: String, console: [String]) {
        let logPath = "\(dir)/chromium-\(log).log"
        let child = try ChildProcess(path: Self.chromium, ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                                                           "--user-data-dir=\(dir)/chromium-profile", "--enable-logging=stderr", "--v=0",
                                                           "--virtual-time-budget=5000"] + arguments, stderrPath: logPath)
        let dom = String(decoding: child.readToEnd(), as: UTF8.self)
        guard child.wait(timeout: 90) != nil else {
            child.signal(SIGKILL)
            throw FleetChaosError("chromium did not finish in 90 s: see \(logPath)")
        }
        let console = ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.contains(":CONSOLE(") }.map(String.init)
        return (dom, console)
    }
}
