import Foundation

/// Finds a scenario by name (`default`, `faults`, …) or path.
public enum ScenarioLocator {
    /// Directories searched for `<name>.yaml`, in order.
    public static func searchDirectories(executable: String) -> [String] {
        let exeDir = URL(fileURLWithPath: executable).resolvingSymlinksInPath().deletingLastPathComponent()
        var dirs: [String] = []
        if let env = ProcessInfo.processInfo.environment["COINSIM_SCENARIOS"] { dirs.append(env) }
        dirs.append(exeDir.deletingLastPathComponent().appendingPathComponent("share/coinmech/scenarios").path)
        // Installed (make install, the .deb): <prefix>/lib/coinmech/bin/coinsim, <prefix>/share/coinmech/scenarios.
        if exeDir.path.hasSuffix("/lib/coinmech/bin") {
            let prefix = exeDir.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            dirs.append(prefix.appendingPathComponent("share/coinmech/scenarios").path)
        }
        // In a source tree: <package>/Simulators/scenarios, found from this file's path.
        dirs.append(URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scenarios").path)
        return dirs
    }

    /// The file for `nameOrPath`: a path if it contains "/" or ends in .yaml, else a shipped name.
    public static func path(for nameOrPath: String, executable: String) -> String? {
        if nameOrPath.contains("/") || nameOrPath.hasSuffix(".yaml") || nameOrPath.hasSuffix(".yml") { return nameOrPath }
        return searchDirectories(executable: executable).map { "\($0)/\(nameOrPath).yaml" }
            .first { FileManager.default.fileExists(atPath: $0) }
    }
}
