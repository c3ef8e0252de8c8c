import CoinMechHarness
import Foundation

extension ChildProcess {
    /// Starts `<bin dir>/<executable> arguments…` (or `executable` itself with `absolute`), with
    /// standard error in a fresh file of its own.
    convenience init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], absolute: Bool = false) throws {
        let path = absolute ? executable : "\(TestSupport.binDirectory)/\(executable)"
        let name = URL(fileURLWithPath: executable).lastPathComponent
        try self.init(path: path, arguments, environment: environment,
                      stderrPath: "\(TestSupport.temporaryDirectory("stderr"))/\(name).stderr")
    }
}
