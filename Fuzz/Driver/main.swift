// coinmech-fuzz TARGET [ARGUMENTS…]   TARGET: frame, request, config, scenario, mdb, cctalk, journal
// (`fuzzMain` says what ARGUMENTS are, in the libFuzzer build and in the ordinary one.)
import CoinMechFuzzDriver
import CoinMechFuzzTargets

fuzzMain(program: "coinmech-fuzz", targets: FuzzTarget.allCases.map(\.rawValue), environmentKey: "COINMECH_FUZZ_TARGET", entry: { name in
    // A C function pointer captures nothing: one literal per target.
    switch FuzzTarget(rawValue: name)! {
    case .frame: { data, size in FuzzTarget.frame.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
    case .request: { data, size in FuzzTarget.request.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
    case .config: { data, size in FuzzTarget.config.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
    case .scenario: { data, size in FuzzTarget.scenario.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
    case .mdb: { data, size in FuzzTarget.mdb.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
    case .cctalk: { data, size in FuzzTarget.cctalk.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
    case .journal: { data, size in FuzzTarget.journal.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
    }
}, replay: { name, bytes in FuzzTarget(rawValue: name)!.run(bytes) })
