import CoinMechFuzzTargets
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// coinmech-fuzz TARGET [ARGUMENTS…]   TARGET: frame, request, config, scenario
//
// Built by `make fuzz-build` (instrumented, AddressSanitizer, linked with libFuzzer) it is a
// libFuzzer binary: ARGUMENTS are libFuzzer's (-runs=N, -max_total_time=S, corpus directories).
// In the ordinary build it replays ARGUMENTS (files or directories of inputs) through the
// target once each, as the tests do with the committed corpus.

let usage = "usage: coinmech-fuzz \(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")) [libFuzzer options] [FILE|DIR…]\n"
var arguments = Array(CommandLine.arguments.dropFirst())
// libFuzzer re-runs argv[0] without the target for -fork and -jobs: the environment carries it.
let targetName = arguments.first.flatMap { FuzzTarget(rawValue: $0) != nil ? $0 : nil } ?? ProcessInfo.processInfo.environment["COINMECH_FUZZ_TARGET"]
guard let targetName, let target = FuzzTarget(rawValue: targetName) else {
    FileHandle.standardError.write(Data(usage.utf8))
    exit(2)
}
if arguments.first == targetName { arguments.removeFirst() }
setenv("COINMECH_FUZZ_TARGET", targetName, 1)

#if COINMECH_LIBFUZZER
typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ test: TestOneInput
) -> CInt

// A C function pointer captures nothing: one literal per target.
let entry: TestOneInput = switch target {
case .frame: { data, size in FuzzTarget.frame.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
case .request: { data, size in FuzzTarget.request.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
case .config: { data, size in FuzzTarget.config.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
case .scenario: { data, size in FuzzTarget.scenario.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
case .mdb: { data, size in FuzzTarget.mdb.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
}
var argv: [UnsafeMutablePointer<CChar>?] = [CommandLine.unsafeArgv[0]] + arguments.map { strdup($0) } + [nil]
var argc = CInt(argv.count - 1)
let status = argv.withUnsafeMutableBufferPointer { buffer in
    var base = buffer.baseAddress!
    return LLVMFuzzerRunDriver(&argc, &base, entry)
}
exit(status)
#else
var files: [String] = []
for path in arguments {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        FileHandle.standardError.write(Data("coinmech-fuzz: no such file or directory: \(path)\n".utf8))
        exit(2)
    }
    if isDirectory.boolValue {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        files += names.sorted().map { "\(path)/\($0)" }.filter { !$0.hasSuffix("/") }
    } else {
        files.append(path)
    }
}
var valid = 0
for file in files {
    guard let data = FileManager.default.contents(atPath: file) else { continue }
    if target.run([UInt8](data)) { valid += 1 }
}
print("coinmech-fuzz \(targetName): \(files.count) inputs replayed, \(valid) valid, no crash (build without libFuzzer: replay only)")
#endif
