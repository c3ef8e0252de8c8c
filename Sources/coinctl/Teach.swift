import ArgumentParser
import CoinMechProtocol
import Foundation

extension CoinCtl {
    struct Teach: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Teach the mech a denomination from sample coins: start, status, commit, abort.",
            discussion: """
                While teaching, every coin inserted is returned (recorded with reason 'teaching', \
                never credited), and its reading is kept as a sample. 'status' shows the figures \
                and a histogram per axis with the proposed window and its neighbours; 'commit' \
                writes the window to the calibration file the chain's coin-table link reads, \
                records it, and reloads the chain; 'abort' ends teach mode with nothing written. \
                See OPERATIONS.md, "Teach mode".
                """,
            subcommands: [Start.self, Status.self, Commit.self, Abort.self])
    }
}

extension CoinCtl.Teach {
    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start teaching one denomination: every coin is returned until commit or abort.")
        @OptionGroup var common: Common
        @Argument(help: "The currency, e.g. EUR.") var currency: String
        @Argument(help: "The denomination's code, e.g. EUR_50c (coinctl chain shows the link's codes).") var code: String
        @Option(help: "Sample coins to collect (\(ClientProtocol.teachCoins.lowerBound)–\(ClientProtocol.teachCoins.upperBound)); 40 for close pairs such as 50c and €1.")
        var coins: Int64 = ClientProtocol.teachDefaultCoins

        func validate() throws {
            guard ClientProtocol.teachCoins.contains(coins) else {
                throw ValidationError("--coins must be from \(ClientProtocol.teachCoins.lowerBound) to \(ClientProtocol.teachCoins.upperBound)")
            }
        }

        func run() throws {
            try common.run(.teachStart(currency: currency, code: code, coins: Int(coins)), as: TeachStartReply.self) { TeachFormat.started($0) }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Samples so far: count, mean and σ per axis, the proposed window, its neighbours, warnings, and a histogram per axis.")
        @OptionGroup var common: Common
        @Option(help: "Histogram width in columns (20–200).") var width: Int = 64
        func validate() throws {
            guard (20...200).contains(width) else { throw ValidationError("--width must be from 20 to 200") }
        }
        func run() throws { try common.run(.teachStatus, as: TeachStatusReply.self) { TeachFormat.status($0, width: width) } }
    }

    struct Commit: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write the taught window to the calibration file, record it, and reload the chain.")
        @OptionGroup var common: Common
        func run() throws { try common.run(.teachCommit, as: TeachCommitReply.self) { TeachFormat.committed($0) } }
    }

    struct Abort: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End teach mode; nothing is written.")
        @OptionGroup var common: Common
        func run() throws { try common.run(.teachAbort, as: TeachAbortReply.self) { TeachFormat.aborted($0) } }
    }
}
