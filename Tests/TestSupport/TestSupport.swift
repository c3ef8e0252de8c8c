import CoinMechHarness
import CoinFacts
import CoinMechChain
import CoinMechPlugins
import Foundation
import Testing

/// Paths and helpers shared by the tests: the build's own plugins, temporary directories,
/// and C fixtures compiled with the system compiler.
enum TestSupport {
    /// The package root (this file is Tests/TestSupport/TestSupport.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The build's products directory: where the test bundle, the executables and the plugins are.
    static let binDirectory: String = {
        if let dir = ProcessInfo.processInfo.environment["COINMECH_BIN_DIR"] { return dir }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // On Linux the test bundle is an executable in the products directory itself.
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("libcoin.so").path), url.path != "/" {
            url.deleteLastPathComponent()
        }
        return url.path
    }()

    /// A fresh private directory (0700), removed by the caller if it likes.
    static func temporaryDirectory(_ label: String = "test") -> String {
        var template = Array("\(NSTemporaryDirectory())/coinmech-\(label)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed: \(errno)") }
        return String(cString: made)
    }

    /// A loader for the plugins the build produced, with a fresh runtime directory.
    static func loader(directory: String = binDirectory) -> PluginLoader {
        PluginLoader(directory: directory, runtimeDirectory: temporaryDirectory("runtime"))
    }

    /// Copies the build's `lib<name>.so` into `directory`; returns the copy's path.
    @discardableResult
    static func copyBuiltPlugin(_ name: String, into directory: String) throws -> String {
        let path = "\(directory)/lib\(name).so"
        try FileManager.default.copyItem(atPath: "\(binDirectory)/lib\(name).so", toPath: path)
        return path
    }

    /// Compiles `Tests/Fixtures/plugins/<name>.c` into a shared object in `directory`, against
    /// this build's coinmech_plugin.h, or the one under `Tests/Fixtures/<header>/include` (an
    /// older ABI's: "abi-2.0").
    static func compileFixture(_ name: String, into directory: String, as output: String? = nil, defines: [String] = [], header: String? = nil) throws -> String {
        let output = "\(directory)/\(output ?? name + ".so")"
        let include = header.map { "\(packageRoot)/Tests/Fixtures/\($0)/include" } ?? "\(packageRoot)/Sources/CoinMechPluginABI/include"
        let cc = try run([
            "cc", "-shared", "-fPIC", "-O1", "-I\(include)",
            "\(packageRoot)/Tests/Fixtures/plugins/\(name).c", "-o", output, "-lm",
        ] + defines.map { "-D\($0)" })
        try #require(cc.status == 0, "cc failed for fixture \(name): \(cc.errors)")
        return output
    }

    /// Runs a tool (found on PATH) to its end through the tests' one process launcher, and
    /// returns its exit status, its output and its errors. A tool still running after
    /// `timeout` seconds is killed and fails the test.
    static func run(_ arguments: [String], timeout: Double = 300) throws -> (status: Int32, output: String, errors: String) {
        let errors = temporaryDirectory("run") + "/stderr"
        let child = try ChildProcess(path: "/usr/bin/env", arguments, stderrPath: errors)
        let output = String(decoding: child.readToEnd(), as: UTF8.self)
        let status = try #require(child.wait(timeout: timeout), "\(arguments.joined(separator: " ")) did not finish in \(timeout) s")
        return (status, output, child.stderr)
    }

    /// Builds a chain from (plugin, JSON) pairs using the build's plugins.
    static func chain(_ links: [LinkSpec], generation: UInt64 = 1) throws -> Chain {
        try ChainBuilder(loader: loader()).build(generation: generation, links: links)
    }
}

extension Reading {
    /// A reading with the nominal figures of a coin, for tests.
    static func coin(_ diameter: Double, _ weight: Double, thickness: Double? = nil, seq: UInt64 = 1, at ms: UInt64 = 0) -> Reading {
        Reading(deviceSeq: seq, timestampNanoseconds: ms * 1_000_000, diameterMM: diameter, weightG: weight, thicknessMM: thickness)
    }
}

extension Decision {
    var denomination: Denomination? {
        if case .accept(let denomination) = verdict { return denomination }
        return nil
    }

    var rejection: Rejection? {
        if case .reject(let rejection) = verdict { return rejection }
        return nil
    }
}

/// A wait that ran out of time: the test fails with what it waited for.
struct WaitTimedOut: Error, CustomStringConvertible {
    let what: String
    let seconds: Double
    var description: String { "waited \(seconds) s for \(what)" }
}

extension TestSupport {
    /// Polls `condition` until it holds; throws `WaitTimedOut` after `timeout` seconds, so a
    /// wait never falls through into the rest of a test.
    static func waitUntil(_ what: String, timeout: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < deadline else { throw WaitTimedOut(what: what, seconds: timeout) }
            usleep(10_000)
        }
    }
}
