import Foundation

/// Where the `coinmech-plugin-host` executable is: as configured, else next to this process's
/// executable (the build directory, /usr/bin), else in `../lib/coinmech/` from it (an install).
public enum HostLocator {
    public static let executableName = "coinmech-plugin-host"

    public static func find(configured: String?) -> (path: String?, tried: [String]) {
        if let configured { return (access(configured, X_OK) == 0 ? configured : nil, [configured]) }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
        let candidates = [
            directory.appendingPathComponent(executableName).path,
            directory.deletingLastPathComponent().appendingPathComponent("lib/coinmech/\(executableName)").standardizedFileURL.path,
        ]
        return (candidates.first { access($0, X_OK) == 0 }, candidates)
    }
}
