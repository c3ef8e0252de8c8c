import ArgumentParser

@main
struct CoinMechBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinmech-bench",
        abstract: "Measures CoinMech against baselines in one run; prints a table or, with --json, one object.",
        subcommands: [ChainBench.self, E2EBench.self, CommitBench.self, ReloadBench.self, ClassifyBench.self, FraudBench.self, IsolationBench.self, FootprintBench.self, BridgeBench.self, FleetBench.self]
    )
}
