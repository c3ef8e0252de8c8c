import ArgumentParser
import CoinMechClient
import CoinMechModel
import CoinMechProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

@main
struct CoinCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coinctl",
        abstract: "Talk to coinmechd: totals, coins as they come, the chain, and control.",
        discussion: """
            coinctl talks to coinmechd over its Unix socket. Reading (status, totals, watch, \
            events, chain, teach status) needs access to the socket: root, or a member of its \
            group (coinmech). Control (inhibit, collect, reload, teach start, commit and abort) \
            also needs a user or group the daemon's \
            configuration permits (socket.control_users and socket.control_groups: by default \
            root and the coinmech-admin group). Tables are for people; --json prints one JSON \
            object per line for scripts (the protocol: /usr/share/doc/coinmech/PROTOCOL.md).

            The socket is --socket, else $COINMECH_SOCKET, else /run/coinmech/coinmechd.sock.

            Exit status: 0 success; 1 the daemon refused the command (its message is printed); 2 \
            the daemon is not running or cannot be reached; 3 permission denied (socket or \
            control command); 4 the daemon did not answer in time or spoke gibberish; 64 usage \
            error.
            """,
        subcommands: [Status.self, Totals.self, Tubes.self, Hoppers.self, Refill.self, Float.self, PayoutPlan.self, Payout.self, Credit.self, Watch.self, Events.self, Chain.self, Explain.self, Inhibit.self, Collect.self, Reload.self, Teach.self])
}

struct Common: ParsableArguments {
    @Option(help: "The daemon's socket.") var socket: String?
    @Flag(help: "Print JSON (one object per line) instead of tables.") var json = false

    var path: String { socket ?? ProcessInfo.processInfo.environment["COINMECH_SOCKET"] ?? CoinMechConnection.defaultPath }

    func connect() throws -> CoinMechConnection {
        do {
            return try CoinMechConnection(path: path)
        } catch {
            throw fail(error)
        }
    }

    /// Runs one request, reads its typed reply, and prints it with `table`, or as JSON: the
    /// daemon's own text, which a newer daemon may extend, once it has read as the type.
    func run<Reply: OperatorReply>(_ command: OperatorCommand, as reply: Reply.Type, timeout: Double = 10, table: (Reply) -> String) throws {
        let connection = try connect()
        do {
            let text = try connection.request(command, timeout: timeout)
            let result = try Reply.read(text)
            print(json ? text.description : table(result))
        } catch {
            throw fail(error)
        }
    }

}

/// Prints the error and turns it into coinctl's exit status.
func fail(_ error: ClientError) -> ExitCode {
    FileHandle.standardError.write(Data("coinctl: \(error)\n".utf8))
    switch error {
    case .notRunning, .connection, .closed: return ExitCode(2)
    case .permissionDenied: return ExitCode(3)
    case .server(let code, _) where code == "forbidden": return ExitCode(3)
    case .server: return ExitCode(1)
    case .timeout, .protocolViolation: return ExitCode(4)
    }
}

extension CoinCtl {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Source, inhibit, ledger, chain generation, counters, uptime.")
        @OptionGroup var common: Common
        func run() throws { try common.run(.status, as: StatusReply.self) { Format.status($0) } }
    }

    struct Totals: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Money since the last collection and over the lifetime.")
        @OptionGroup var common: Common
        func run() throws { try common.run(.totals, as: CoinMechModel.Totals.self) { Format.totals($0) } }
    }

    struct Tubes: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "An MDB changer's change tubes: coins in each, as it last counted them.")
        @OptionGroup var common: Common
        func run() throws { try common.run(.status, as: StatusReply.self) { Format.tubesTable($0) } }
    }

    struct Hoppers: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The ccTalk payout hoppers: each one's coin, its level on the ledger and its own state.")
        @OptionGroup var common: Common
        func run() throws { try common.run(.status, as: StatusReply.self) { Format.hoppersTable($0) } }
    }

    struct Refill: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Record coins loaded into a hopper: its level on the ledger rises (audited, with who did it).")
        @OptionGroup var common: Common
        @Argument(help: "The hopper: its unit number (coinctl hoppers lists them) or its coin id, e.g. EU200A.") var unit: String
        @Argument(help: "The coins loaded.") var coins: Int
        @Option(name: .customLong("request-id"), help: "The refill's id: 1 to 64 of A-Z a-z 0-9 . _ : - (default: a new UUID). Asked again with it, it is never counted twice.")
        var requestID: String?

        func validate() throws {
            guard ClientProtocol.inventoryCoins.contains(Int64(coins)) else { throw ValidationError("coins must be 1 to \(ClientProtocol.inventoryCoins.upperBound), got \(coins)") }
            try RetryableRequest.validate(requestID)
        }

        func run() throws {
            try RetryableRequest.run(common, "refill", requestID, as: InventoryReply.self, learn: "whether it was recorded", otherwise: "count it again",
                                     table: Format.inventoryChange) { .refill(unit: unit, coins: coins, requestID: $0) }
        }
    }

    /// Payout, refill and float: a request id sent every time (a new one printed first, before
    /// anything is sent), so that a retry after a lost answer is answered from the ledger and
    /// never paid or counted twice.
    enum RetryableRequest {
        static func validate(_ requestID: String?) throws {
            if let requestID, !ClientProtocol.isRequestID(requestID) {
                throw ValidationError("--request-id must be 1 to 64 characters of A-Z a-z 0-9 . _ : -, got '\(requestID)'")
            }
        }

        /// `learn`: what asking again tells; `otherwise`: what a new id would do.
        static func run<Reply: OperatorReply>(_ common: Common, _ what: String, _ requestID: String?, as reply: Reply.Type, timeout: Double = 10,
                                              learn: String, otherwise: String, table: (Reply) -> String, _ command: (String) -> OperatorCommand) throws {
            let id = requestID ?? UUID().uuidString
            if requestID == nil { FileHandle.standardError.write(Data("coinctl: \(what) request id \(id) (ask again with --request-id \(id))\n".utf8)) }
            do {
                try common.run(command(id), as: reply, timeout: timeout, table: table)
            } catch let exit as ExitCode where exit != .success {
                FileHandle.standardError.write(Data("coinctl: \(what) \(id): ask again with --request-id \(id) to learn \(learn); a new id would \(otherwise)\n".utf8))
                throw exit
            }
        }
    }

    struct Float: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Record a hopper's coins as counted: its level on the ledger is set to them (audited, with who did it).")
        @OptionGroup var common: Common
        @Argument(help: "The hopper: its unit number (coinctl hoppers lists them) or its coin id, e.g. EU200A.") var unit: String
        @Argument(help: "The coins counted in it.") var level: Int
        @Option(name: .customLong("request-id"), help: "The count's id: 1 to 64 of A-Z a-z 0-9 . _ : - (default: a new UUID). Asked again with it, it is never applied twice.")
        var requestID: String?

        func validate() throws {
            guard ClientProtocol.inventoryLevel.contains(Int64(level)) else { throw ValidationError("level must be 0 to \(ClientProtocol.inventoryLevel.upperBound), got \(level)") }
            try RetryableRequest.validate(requestID)
        }

        func run() throws {
            try RetryableRequest.run(common, "float", requestID, as: InventoryReply.self, learn: "whether it was recorded", otherwise: "count it again",
                                     table: Format.inventoryChange) { .float(unit: unit, level: level, requestID: $0) }
        }
    }

    struct PayoutPlan: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "payout-plan",
            abstract: "How an MDB changer or ccTalk hoppers would pay an amount, or the nearest amounts they can pay. Nothing moves.")
        @OptionGroup var common: Common
        @Argument(help: "The amount, with two decimals as coinctl totals prints money, e.g. 0.35.") var amount: String
        @Option(help: "Its currency (default: the changer's).") var currency: String?

        /// "0.35" → 35: whole units and up to two decimals.
        static func minorUnits(_ text: String) -> Int64? {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let whole = Int64(parts[0]), whole >= 0, whole < 1_000_000 else { return nil }
            guard parts.count == 2 else { return whole * 100 }
            guard (1...2).contains(parts[1].count), parts[1].allSatisfy(\.isASCII), let fraction = Int64(parts[1]), fraction >= 0 else { return nil }
            return whole * 100 + fraction * (parts[1].count == 1 ? 10 : 1)
        }

        func validate() throws {
            guard let minor = Self.minorUnits(amount), ClientProtocol.payoutAmount.contains(minor) else {
                throw ValidationError("the amount must be money such as 0.35, from 0.01 to \(Format.money(ClientProtocol.payoutAmount.upperBound, "")), got '\(amount)'")
            }
        }

        func run() throws {
            try common.run(.payoutPlan(amountMinor: Self.minorUnits(amount)!, currency: currency?.uppercased()), as: PayoutPlanReply.self) { Format.payoutPlan($0) }
        }
    }

    struct Payout: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pay an amount from an MDB changer's tubes or ccTalk hoppers, journalled before any coin moves.",
            discussion: """
                The changer pays the fewest coins that make the amount exactly, or nothing moves (the nearest amounts are named). \
                A request id names the payout: asked again with the same id, it is answered from the ledger and never paid twice. \
                Without --request-id a new one is made and printed; pass it again to retry safely.
                """)
        @OptionGroup var common: Common
        @Argument(help: "The amount, e.g. 0.35.") var amount: String
        @Option(help: "Its currency (default: the changer's).") var currency: String?
        @Option(name: .customLong("request-id"), help: "The payout's id: 1 to 64 of A-Z a-z 0-9 . _ : - (default: a new UUID).") var requestID: String?

        func validate() throws {
            guard let minor = PayoutPlan.minorUnits(amount), ClientProtocol.payoutAmount.contains(minor) else {
                throw ValidationError("the amount must be money such as 0.35, from 0.01 to \(Format.money(ClientProtocol.payoutAmount.upperBound, "")), got '\(amount)'")
            }
            try RetryableRequest.validate(requestID)
        }

        func run() throws {
            // A payout answers once the changer has paid and counted: longer than a read.
            try RetryableRequest.run(common, "payout", requestID, as: PayoutReply.self, timeout: 60, learn: "its outcome", otherwise: "pay again",
                                     table: Format.payout) {
                .payout(amountMinor: PayoutPlan.minorUnits(amount)!, currency: currency?.uppercased(), requestID: $0)
            }
        }
    }

    struct Chain: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The validator chain with statistics.")
        @OptionGroup var common: Common
        func run() throws { try common.run(.chain, as: ChainReply.self) { Format.chain($0) } }
    }

    struct Explain: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "How the running chain would judge a reading, link by link: coin-table's distances and the drift it follows now.",
            discussion: "Nothing is decided or recorded, and no link's state changes. Isolated links are not asked.")
        @OptionGroup var common: Common
        @Argument(help: "DIAMETER,WEIGHT[,THICKNESS] in mm, g, mm, e.g. 24.26,5.67,1.75 (DIAMETER alone for a light gate)") var figures: String
        func validate() throws { _ = try parsed() }
        func parsed() throws -> OperatorCommand {
            let parts = figures.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard (1...3).contains(parts.count), parts.allSatisfy({ $0.map { $0.isFinite && $0 > 0 } ?? false }) else {
                throw ValidationError("'\(figures)' is not DIAMETER,WEIGHT[,THICKNESS] in mm, g, mm (e.g. 24.26,5.67,1.75)")
            }
            return .explain(diameter: parts[0]!, weight: parts.count > 1 ? parts[1]! : nil, thickness: parts.count > 2 ? parts[2]! : nil)
        }
        func run() throws { try common.run(try parsed(), as: ExplainReply.self) { Format.explanation($0) } }
    }

    struct Events: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Recorded events after a sequence number.")
        @OptionGroup var common: Common
        @Option(help: "Show events after this seq.") var since: Int64 = 0
        @Option(help: "At most this many (1–1000).") var limit: Int64 = 50
        func run() throws {
            try common.run(.events(since: since, limit: limit), as: EventsReply.self) { result in
                result.events.map { Format.event($0) }.joined(separator: "\n")
            }
        }
    }

    struct Inhibit: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Inhibit the mech (it returns every coin) or lift it.")
        @OptionGroup var common: Common
        @Argument(help: "on or off") var state: String
        func validate() throws {
            guard ["on", "off"].contains(state) else { throw ValidationError("say 'on' or 'off'") }
        }
        func run() throws {
            try common.run(.inhibit(state == "on"), as: InhibitReply.self) { result in
                result.inhibited ? "mech inhibited: coins are returned" : "mech accepting coins"
            }
        }
    }

    struct Collect: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Close the cash-box period; prints what was collected.")
        @OptionGroup var common: Common
        func run() throws {
            try common.run(.collect, as: CollectReply.self) { result in
                "collected (event #\(result.seq)):\n" + Format.rows("collected", result.collected)
            }
        }
    }

    struct Reload: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rebuild the chain from the configuration and plugins; prints the outcome.")
        @OptionGroup var common: Common
        func run() throws {
            try common.run(.reload, as: ReloadReply.self) { result in
                "reloaded: chain generation \(result.generation)"
            }
        }
    }
}
