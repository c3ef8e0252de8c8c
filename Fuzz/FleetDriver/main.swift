// coinmech-fuzz-fleet TARGET [ARGUMENTS…]   TARGET: bridge, fleet (the fleet's MQTT payloads)
// (`fuzzMain` says what ARGUMENTS are, in the libFuzzer build and in the ordinary one.)
import CoinMechFleetFuzzTargets
import CoinMechFuzzDriver

fuzzMain(program: "coinmech-fuzz-fleet", targets: FleetFuzzTarget.allCases.map(\.rawValue), environmentKey: "COINMECH_FUZZ_FLEET_TARGET", entry: { name in
    switch FleetFuzzTarget(rawValue: name)! {
    case .bridge: { data, size in FleetFuzzTarget.bridge.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
    case .fleet: { data, size in FleetFuzzTarget.fleet.run(UnsafeRawBufferPointer(start: data, count: size)); return 0 }
    }
}, replay: { name, bytes in FleetFuzzTarget(rawValue: name)!.run(bytes) })
