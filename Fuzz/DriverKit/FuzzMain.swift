import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer's test function: one input, 0 back.
public typealias FuzzEntry = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

/// The body of a fuzz driver (`coinmech-fuzz`, `coinmech-fuzz-fleet`): `PROGRAM TARGET [ARGUMENTS…]`.
///
/// Built by `make fuzz-build` (instrumented, AddressSanitizer, linked with libFuzzer), ARGUMENTS
/// are libFuzzer's (-runs=N, -max_total_time=S, corpus directories) and `entry` gives the
/// target's test function (a C function pointer captures nothing: the driver writes one literal
/// per target). In the ordinary build ARGUMENTS are files or directories of inputs, each replayed
/// once through `replay`, as the tests do with the committed corpus.
public func fuzzMain(program: String, targets: [String], environmentKey: String, entry: (String) -> FuzzEntry,
                     replay: (String, [UInt8]) -> Bool) -> Never {
    let usage = "usage: \(program) \(targets.joined(separator: "|")) [libFuzzer options] [FILE|DIR…]\n"
    var arguments = Array(CommandLine.arguments.dropFirst())
    // libFuzzer re-runs argv[0] without the target for -fork and -jobs: the environment carries it.
    let named = arguments.first.flatMap { targets.contains($0) ? $0 : nil } ?? ProcessInfo.processInfo.environment[environmentKey]
    guard let target = named, targets.contains(target) else {
        FileHandle.standardError.write(Data(usage.utf8))
        exit(2)
    }
    if arguments.first == target { arguments.removeFirst() }
    setenv(environmentKey, target, 1)
    #if COINMECH_LIBFUZZER
    var argv: [UnsafeMutablePointer<CChar>?] = [CommandLine.unsafeArgv[0]] + arguments.map { strdup($0) } + [nil]
    var argc = CInt(argv.count - 1)
    let test = entry(target)
    let status = argv.withUnsafeMutableBufferPointer { buffer in
        var base = buffer.baseAddress!
        return LLVMFuzzerRunDriver(&argc, &base, test)
    }
    exit(status)
    #else
    var files: [String] = []
    for path in arguments {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            FileHandle.standardError.write(Data("\(program): no such file or directory: \(path)\n".utf8))
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
        if replay(target, [UInt8](data)) { valid += 1 }
    }
    print("\(program) \(target): \(files.count) inputs replayed, \(valid) valid, no crash (build without libFuzzer: replay only)")
    exit(0)
    #endif
}

#if COINMECH_LIBFUZZER
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>, _ test: FuzzEntry
) -> CInt
#endif
