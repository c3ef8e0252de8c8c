// swift-tools-version:6.0
import PackageDescription

/// Each validator plugin is its own dynamic library, loaded by coinmechd with dlopen. It exports
/// its entry point and nothing else (plugins/exports.map; `coinmech-pluginval` checks it).
func plugin(_ product: String, target: String, path: String, swift: Bool = true, extra: [Target.Dependency] = []) -> (Product, Target) {
    let product = Product.library(name: product, type: .dynamic, targets: [target])
    let exports: [LinkerSetting] = [.unsafeFlags(["-Xlinker", "--version-script=\(Context.packageDirectory)/plugins/exports.map"])]
    let target: Target = swift
        ? .target(name: target, dependencies: ["CoinMechPluginKit"] + extra, path: path, linkerSettings: exports)
        : .target(name: target, dependencies: ["CoinMechPluginABI"], path: path, linkerSettings: exports)
    return (product, target)
}

let plugins = [
    plugin("coin", target: "CoinPlugin", path: "plugins/coin"),
    plugin("coin-table", target: "CoinTablePlugin", path: "plugins/coin-table", extra: ["CoinFacts", "CoinMechCalibration", "CoinMechEddyCurrent"]),
    plugin("sanity", target: "SanityPlugin", path: "plugins/sanity"),
    plugin("repeat-guard", target: "RepeatGuardPlugin", path: "plugins/repeat-guard"),
    plugin("weight-floor", target: "WeightFloorPlugin", path: "plugins/weight-floor", swift: false),
    plugin("channel-map", target: "ChannelMapPlugin", path: "plugins/channel-map"),
    plugin("coin-id", target: "CoinIDPlugin", path: "plugins/coin-id"),
    // The Swift example of docs/PLUGINS.md, built so the example stays true.
    plugin("example-minimal-swift", target: "MinimalSwiftExample", path: "examples/plugins/MinimalSwift"),
]

let package = Package(
    name: "CoinMech",
    products: [
        .executable(name: "coinmech-bench", targets: ["CoinMechBench"]),
        .executable(name: "coinsim", targets: ["CoinSim"]),
        .executable(name: "coinmechd", targets: ["coinmechd"]),
        .executable(name: "coinctl", targets: ["coinctl"]),
        .executable(name: "coinmech-bridge", targets: ["coinmech-bridge"]),
        .executable(name: "coinmech-fleet", targets: ["coinmech-fleet"]),
        .executable(name: "coinmech-fleet-chaos", targets: ["CoinMechFleetChaos"]),
        .executable(name: "coinmech-crash", targets: ["CoinMechCrash"]),
        .executable(name: "coinmech-bridge-chaos", targets: ["CoinMechBridgeChaos"]),
        .executable(name: "coinmech-fuzz", targets: ["CoinMechFuzz"]),
        .executable(name: "coinmech-soak", targets: ["CoinMechSoak"]),
        .executable(name: "coinmech-fuzz-fleet", targets: ["CoinMechFuzzFleet"]),
        .executable(name: "coinmech-plugin-host", targets: ["CoinMechPluginHost"]),
        .executable(name: "coinmech-pluginval", targets: ["CoinMechPluginval"]),
    ] + plugins.map(\.0),
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        // The fleet service: PostgreSQL through postgres-nio, its dashboard through Hummingbird,
        // operators' passwords through bcrypt (hummingbird-auth).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        // Complex numbers for the eddy-current sensor's physics (the alloy axis).
        .package(url: "https://github.com/apple/swift-numerics", from: "1.0.0"),
    ],
    targets: [
        // The host/plugin contract: one C header.
        .target(name: "CoinMechPluginABI"),
        // Mint figures for USD, EUR and GBP coins: sizes, values, compositions; the metals' constants.
        .target(name: "CoinFacts"),
        // How an eddy-current coil sees a coin: skin depth, a layered coin's surface impedance,
        // apparent conductivity and permeability (the alloy axis), from the materials and layers.
        .target(name: "CoinMechEddyCurrent", dependencies: ["CoinFacts", .product(name: "Numerics", package: "swift-numerics")]),
        // libcrypto's SHA-256 for content-addressed plugin copies.
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // The vocabulary: instants, mech events and readings, line errors, the credit rule, the
        // ledger's value types, failpoint names. Nothing but the standard library, so the
        // deciding core that speaks it is pure by construction.
        .target(name: "CoinMechModel"),
        // Small utilities of the processes: named threads, a wake pipe, a log rate limit, and
        // `Instant.now` (the kernel's monotonic clock, which the vocabulary never reads).
        .target(name: "CoinMechSupport", dependencies: ["CoinMechModel", "CLinux"]),
        // Readings, verdicts, decisions and the chain of validator links.
        .target(name: "CoinMechChain", dependencies: ["CoinMechPluginABI", "CLinux", "CoinFacts"]),
        // Loading plugins with dlopen and wrapping their instances as chain links, in process or
        // isolated in a sandboxed plugin host; quarantine.
        .target(name: "CoinMechPlugins", dependencies: ["CoinMechModel", "CoinMechSupport", "CoinMechChain", "CoinMechPluginABI", "COpenSSL", "CSandbox", "CLinux"]),
        // Settings files (configuration, scenarios): YAML through Yams, errors with file, line and key.
        .target(name: "CoinMechSettings", dependencies: [.product(name: "Yams", package: "Yams")]),
        // libgpiod 1.6 (Debian 12) and libudev, the real hardware interfaces.
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        // libmosquitto, the Eclipse MQTT client (no Swift MQTT client resolves here): the fleet bridge's link.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(name: "CUdev", pkgConfig: "libudev", providers: [.apt(["libudev-dev"])]),
        // GPIO coin mechs: edge events in, readings out (pure decoders), and the libgpiod seam.
        .target(name: "CoinMechGPIO", dependencies: ["CGPIOD"]),
        // Device hotplug through libudev: the monitor seam and the matching logic above it.
        .target(name: "CoinMechHotplug", dependencies: ["CUdev", "CGPIOD"]),
        // Named failpoints on the money path, armed by COINMECH_FAILPOINTS (the crash suite).
        .target(name: "CoinMechFailpoints", dependencies: ["CoinMechModel"]),
        // Linux calls the Glibc module leaves out (signalfd, ppoll, SO_PEERCRED, the monotonic
        // clock), a clean spawn, the plugin breadcrumb and the plugin host's channel.
        .target(name: "CLinux"),
        // The plugin host's sandbox layers: network namespace, limits, Landlock, and a seccomp
        // allow-list through libseccomp (Debian libseccomp-dev), the kernel's reference library.
        .target(name: "CSandbox", linkerSettings: [.linkedLibrary("seccomp")]),
        // The raw-sensor mech's serial line protocol: readings, answers, confirmations, journal
        // queries, status and inhibit ($CMR, $CMD, $CMC, $CMQ/$CMJ, $CMH/$CMS, $CMI).
        .target(name: "CoinMechSerial", dependencies: ["CoinMechModel"]),
        // ccTalk coin acceptors: frames, checksums, the receiver, typed requests and replies,
        // and the host engine (no I/O) that turns the credit buffer into ledger batches.
        .target(name: "CoinMechCCTalk"),
        // MDB coin changers through a USB/serial MDB master adapter: the adapter's ASCII lines,
        // the changer's commands, and its replies read into typed values (no I/O).
        .target(name: "CoinMechMDB"),
        // The mech drivers: the serial raw-sensor mech, GPIO pulse mechs, ccTalk acceptors and MDB changers
        // (termios, reconnects, hotplug), each behind the `Mech` protocol the deciding loop drives.
        .target(name: "CoinMechSources", dependencies: ["CoinMechModel", "CoinMechSupport", "CoinMechSerial", "CoinMechCCTalk", "CoinMechMDB", "CoinMechGPIO", "CoinMechHotplug", "CLinux", "CoinMechFailpoints"]),
        // The deciding core: the money rules as a pure state machine (no I/O, simulated time in tests).
        // It depends on the vocabulary alone (`scripts/module-graph --check`, run by make test).
        .target(name: "CoinMechCore", dependencies: ["CoinMechModel"]),
        // The durable record: SQLite in WAL mode with synchronous=FULL, through GRDB.
        .target(name: "CoinMechLedger", dependencies: ["CoinMechModel", "CoinMechSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        // The client protocol's messages, shared by the daemon and its clients.
        .target(name: "CoinMechProtocol", dependencies: ["CoinMechModel"]),
        // The Unix-socket API: JSON lines, subscriptions with replay, access control.
        .target(
            name: "CoinMechPublisher",
            dependencies: [
                "CoinMechProtocol", "CoinMechModel", "CoinMechLedger",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A blocking client for the socket API (coinctl, tests, scripts in Swift).
        .target(name: "CoinMechClient", dependencies: ["CoinMechProtocol"]),
        // One MQTT connection through libmosquitto, reconnecting afresh with back-off: the bridge's
        // link and the fleet's.
        .target(name: "CoinMechMQTT", dependencies: ["CMosquitto", "CoinMechSupport", "CoinMechSettings"]),
        // The fleet bridge: a client of the socket publishing the ledger to MQTT (docs/FLEET.md).
        .target(
            name: "CoinMechBridge",
            dependencies: [
                "CoinMechMQTT", "CoinMechClient", "CoinMechProtocol", "CoinMechSettings", "CoinMechSupport",
                // `/metrics`: the text format by swift-prometheus, served over HTTP/1 by SwiftNIO.
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "coinmech-bridge",
            dependencies: ["CoinMechBridge", "CoinMechSupport", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), .product(name: "Logging", package: "swift-log")]
        ),
        // The fleet service (docs/FLEET.md): every cabinet's events from the broker into
        // PostgreSQL once, acks, gaps repaired, counters, collections, alerts.
        .target(
            name: "CoinMechFleet",
            dependencies: [
                "CoinMechMQTT", "CoinMechSettings", "CoinMechProtocol", "CoinMechModel", "CoinMechSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The fleet's dashboard: server-rendered pages over the fleet's database (Hummingbird),
        // operators' logins (bcrypt).
        .target(
            name: "CoinMechFleetWeb",
            dependencies: [
                "CoinMechFleet",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "coinmech-fleet",
            dependencies: [
                "CoinMechFleet", "CoinMechFleetWeb",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // MaximumAvailableConnections: the dashboard's connection cap.
                .product(name: "HummingbirdCore", package: "hummingbird"),
            ]
        ),
        .executableTarget(
            name: "coinctl",
            dependencies: ["CoinMechClient", "CoinMechProtocol", "CoinMechModel", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // The driver table: one driver per kind of mech (serial, gpio, gpio-replay, cctalk, mdb), each
        // with its configuration section's parser, how it makes the mech, its credit rule, its
        // capabilities and what coinsim plays it.
        .target(
            name: "CoinMechDrivers",
            dependencies: ["CoinMechModel", "CoinMechSettings", "CoinMechSources", "CoinMechSerial", "CoinMechCCTalk", "CoinMechMDB", "CoinMechGPIO", "CoinMechHotplug", "CoinMechFailpoints"]
        ),
        // coinmechd's configuration: the typed settings and a parser per section (source and its
        // kind, socket, ledger, plugins, chain); every error names file, line and key.
        .target(
            name: "CoinMechConfiguration",
            dependencies: [
                "CoinMechModel", "CoinMechCore", "CoinMechDrivers", "CoinMechSettings", "CoinMechChain", "CoinMechPlugins", "CoinMechHotplug",
                "CoinFacts", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Daemon wiring: the deciding loop, logging, lifecycle.
        .target(
            name: "CoinMechDaemon",
            dependencies: [
                "CoinMechModel", "CoinMechSupport", "CoinMechConfiguration", "CoinMechDrivers", "CoinMechChain", "CoinMechPlugins", "CoinMechSources", "CoinMechLedger", "CoinMechSettings", "CoinMechSerial", "CLinux", "CoinMechCore", "CoinMechCCTalk", "CoinMechMDB",
                "CoinMechPublisher", "CoinMechProtocol", "CoinMechGPIO", "CoinMechHotplug", "CoinMechFailpoints",
                // Teach mode, and the mints' figures to check what it taught against.
                "CoinMechTeach", "CoinMechCalibration", "CoinFacts",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "coinmechd",
            dependencies: ["CoinMechDaemon", "CoinMechPlugins", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // Runs one isolated link's plugin in a process of its own, for coinmechd.
        .executableTarget(name: "CoinMechPluginHost", dependencies: ["CoinMechPlugins", "CoinMechChain", "CLinux", "CSandbox"]),
        // Checks a plugin before a daemon loads it, each check in a child process (crashes and hangs are findings).
        .executableTarget(
            name: "CoinMechPluginval",
            dependencies: [
                "CoinMechPlugins", "CoinMechChain", "CoinFacts", "CLinux", "AllocationCounter", "CoinMechSettings", "CoinSimCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // A mech's calibration: each taught coin's spread per axis, fitted from sample coins, and
        // the file teach mode writes and coin-table reads.
        .target(name: "CoinMechCalibration"),
        // Teach mode's work outside the core: the statistics `teach status` shows, the coin-table
        // link and file it teaches, and the calibration file staged, installed or discarded.
        .target(
            name: "CoinMechTeach",
            dependencies: ["CoinMechCalibration", "CoinMechCore", "CoinMechModel", "CoinMechConfiguration", "CoinMechChain", "CoinMechPlugins", "CoinMechSupport",
                           "CoinMechLedger", "CoinMechProtocol", "CoinMechSources", "CoinFacts"]
        ),
        // What a validator plugin written in Swift builds on.
        .target(name: "CoinMechPluginKit", dependencies: ["CoinMechPluginABI"]),

        // The coin-mech simulator: scenarios, pseudo-terminal device, ground truth, traces.
        .target(name: "CoinSimCore", dependencies: ["CoinMechModel", "CoinMechSupport", "CoinFacts", "CoinMechEddyCurrent", "CoinMechSerial", "CoinMechCCTalk", "CoinMechMDB", "CoinMechSettings", "CoinMechGPIO", "CLinux"], path: "Simulators/CoinSimCore"),
        .executableTarget(
            name: "CoinSim",
            dependencies: ["CoinSimCore", "CoinMechSettings", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Simulators/coinsim"
        ),

        // The simulator's ground truth joined with the ledger: lost, doubled, phantom, unconfirmed.
        .target(name: "CoinMechAudit", dependencies: ["CoinMechModel", "CoinMechLedger", "CoinSimCore"]),

        .executableTarget(
            name: "CoinMechBench",
            dependencies: [
                "CoinMechPlugins", "CoinFacts", "AllocationCounter", "CoinSimCore", "CoinMechPluginKit", "CoinMechCalibration", "CoinMechHarness",
                "CoinMechModel", "CoinMechLedger", "CoinMechClient", "CoinMechMQTT", "CoinMechProtocol", "CoinMechEddyCurrent", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/CoinMechBench"
        ),
        // `make test-crash`: kills and stalls at every failpoint and at random, then the money audit.
        .executableTarget(
            name: "CoinMechCrash",
            dependencies: [
                "CoinMechAudit", "CoinMechClient", "CoinMechFailpoints", "CoinMechLedger", "CoinMechModel", "CoinMechProtocol", "CoinSimCore", "CoinMechHarness",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/CrashSuite"
        ),
        // `make soak`: a million coins with reloads, clients, a bridge and kills; the figures and the audit.
        .executableTarget(
            name: "CoinMechSoak",
            dependencies: [
                "CoinMechAudit", "CoinMechClient", "CoinMechHarness", "CoinMechLedger", "CoinMechModel", "CoinMechProtocol", "CoinSimCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/Soak"
        ),
        // `make test-bridge`: the bridge, the broker, the daemon and a consumer killed at random
        // while coins flow; then the consumer's store against the ledger, seq by seq.
        .executableTarget(
            name: "CoinMechBridgeChaos",
            dependencies: [
                "CoinMechClient", "CoinMechHarness", "CoinMechLedger", "CoinMechProtocol", "CoinSimCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/BridgeChaos"
        ),
        // `make test-fleet`: three cabinets (coinsim, coinmechd and the bridge each), a broker,
        // PostgreSQL and coinmech-fleet, killed and restarted while coins flow; then every ledger
        // against the fleet's database, and the dashboard in headless Chromium.
        .executableTarget(
            name: "CoinMechFleetChaos",
            dependencies: [
                "CoinMechClient", "CoinMechHarness", "CoinMechLedger", "CoinMechModel", "CoinMechProtocol", "CoinSimCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/FleetChaos"
        ),
        // The fuzz targets (serial frames, socket requests, configuration, scenarios, MDB adapter lines, ccTalk lines,
        // the decision journal) and their driver: a libFuzzer binary when built by `make fuzz-build`, a corpus replayer otherwise.
        .target(
            name: "CoinMechFuzzTargets",
            dependencies: ["CoinMechModel", "CoinMechSerial", "CoinMechProtocol", "CoinMechSettings", "CoinMechConfiguration", "CoinSimCore", "CoinMechMDB",
                           "CoinMechCCTalk", "CoinMechLedger"],
            path: "Fuzz/Targets"
        ),
        .target(name: "CoinMechFuzzDriver", path: "Fuzz/DriverKit"),
        .executableTarget(name: "CoinMechFuzz", dependencies: ["CoinMechFuzzTargets", "CoinMechFuzzDriver"], path: "Fuzz/Driver"),
        // The fleet's MQTT payloads (the bridge's commands, the fleet's cabinet messages): a binary
        // of their own, as the bridge and the fleet bring SwiftNIO and PostgresNIO (`make fuzz-fleet`).
        .target(name: "CoinMechFleetFuzzTargets", dependencies: ["CoinMechBridge", "CoinMechFleet", "CoinMechProtocol"], path: "Fuzz/FleetTargets"),
        .executableTarget(name: "CoinMechFuzzFleet", dependencies: ["CoinMechFleetFuzzTargets", "CoinMechFuzzDriver"], path: "Fuzz/FleetDriver"),
        // What runs coinmechd against coinsim, for the tests, the crash suite and the benches:
        // real child processes (clean signal mask, killed with the process that started them,
        // reaped on every path), the fixture chains, spelled once, and threads' wake-ups from /proc.
        .target(name: "CoinMechHarness", dependencies: ["CLinux"], path: "Tests/Harness"),
        // Counts heap allocations by interposing malloc, so the bench can show a path allocates nothing.
        .target(name: "AllocationCounter", path: "Benchmarks/AllocationCounter"),

        // What both test targets share: the package's paths, the built plugins and fixtures,
        // chains to test with, waits that fail when they time out, the ccTalk test ledger.
        .target(
            name: "CoinMechTestSupport",
            dependencies: [
                "CoinFacts", "CoinMechChain", "CoinMechPlugins", "CoinMechCCTalk", "CoinMechCore", "CoinMechModel", "CoinSimCore", "CoinMechHarness",
            ],
            path: "Tests/TestSupport"
        ),
        // Fast tests of one part at a time, in process (the deciding core on simulated time,
        // parsers, the chain through real dlopen, the ledger in a scratch directory). They run in
        // parallel.
        .testTarget(
            name: "CoinMechUnitTests",
            dependencies: [
                "CoinMechTestSupport", "CoinMechCore", "CoinMechModel", "CoinMechSupport", "CoinMechCCTalk", "CoinMechLedger", "CoinMechSources",
                "CoinMechSerial", "CoinMechFailpoints", "CoinSimCore", "CoinMechPlugins", "CoinMechChain", "CoinFacts", "CoinMechSettings", "CoinMechEddyCurrent",
                "CoinMechDaemon", "CoinMechConfiguration", "CoinMechDrivers", "CoinMechTeach", "CoinMechCalibration", "CoinMechProtocol", "CoinMechGPIO", "CoinMechHotplug", "CLinux", "CoinMechPluginABI",
                "CoinMechPluginKit", "CoinMechFuzzTargets", "CoinMechFleetFuzzTargets", "CoinMechMDB", "CoinMechBridge", "CoinMechMQTT", "CoinMechFleet", "CoinMechFleetWeb", "CoinMechHarness", "CoinMechAudit", "coinctl", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Tests/CoinMechUnitTests"
        ),
        // Real processes end to end: coinmechd against coinsim on pseudo-terminals, plugin hosts,
        // systemd's tools, the socket API. They run one at a time: each holds the daemon to the
        // mech's deadline on two cores.
        .testTarget(
            name: "CoinMechIntegrationTests",
            dependencies: [
                "CoinMechTestSupport", "CoinMechCCTalk", "CoinMechMDB",
                "CoinMechPlugins", "CoinMechChain", "CoinFacts", "CoinMechSerial", "CoinMechSettings", "CoinSimCore",
                "CoinMechDaemon", "CoinMechConfiguration", "CoinMechDrivers", "CoinMechTeach", "CoinMechCalibration", "CoinMechLedger", "CoinMechSources", "CoinMechClient", "CoinMechProtocol",
                "CoinMechGPIO", "CoinMechHotplug", "CLinux", "CoinMechFailpoints", "CoinMechAudit", "CoinMechPluginABI", "CoinMechPluginKit",
                "CoinMechCore", "CoinMechModel", "CoinMechSupport", "CoinMechHarness", "CoinMechBridge", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Tests/CoinMechIntegrationTests"
        ),
    ] + plugins.map(\.1)
)
