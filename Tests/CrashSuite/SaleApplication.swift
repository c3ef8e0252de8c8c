import ArgumentParser
import CoinMechAudit
import CoinMechClient
import CoinMechProtocol
import CoinSimCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `coinmech-crash sell`: the sale application of the crash runs, as a kiosk written the way
/// PROTOCOL.md asks one to be: it sells from the customer's credit, puts back a sale whose
/// product did not drop, and presses the coin return, each under a request id written to its
/// journal (and synced) before it is sent, and asked again with the same id until answered,
/// across its own SIGKILLs and the daemon's. Its journal is what the audit holds it to.
/// SIGTERM: no new command; the ones unanswered are asked until answered (at most 60 s).
struct Sell: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sell",
        abstract: "The crash runs' sale application: spend, refund and cancel on the daemon's credit, journalled, until SIGTERM.")

    @Option(help: "The daemon's socket.") var socket: String
    @Option(help: "The application's journal (JSON lines), kept across its restarts.") var journal: String
    @Option(help: "Seed of its choices.") var seed: UInt64

    func run() throws {
        let stopping = Atomic<Bool>(false)
        signal(SIGTERM, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        source.setEventHandler { stopping.store(true, ordering: .sequentiallyConsistent) }
        source.resume()
        var book = try SaleJournal(path: journal)
        try book.append(["t": "start"])
        var random = SplitMix64(seed: seed &+ UInt64(book.starts))
        var client: CoinMechConnection?
        var number = 0
        var drainUntil: Date?
        while true {
            if stopping.load(ordering: .sequentiallyConsistent), drainUntil == nil { drainUntil = Date().addingTimeInterval(60) }
            if let drainUntil, book.pending.isEmpty || Date() > drainUntil { break }
            // The oldest unanswered command first, with its own id; a new one only when none is left.
            var intent = book.pending.first
            if intent == nil {
                number += 1
                intent = book.next(number: number, random: &random)
                try book.append(intent!.line)
            }
            guard let asked = intent else { continue }
            do throws(ClientError) {
                if client == nil { client = try CoinMechConnection(path: socket) }
                let reply = try client!.request(asked.command, as: CreditReply.self, timeout: 40)
                // A return still paying is asked about again; anything else is its answer.
                if reply.state == .returned, reply.payout?.state == .open { throw .timeout }
                try? book.append(["t": "answer", "id": asked.id, "kind": asked.kind.rawValue, "state": reply.state.rawValue,
                                  "amount": reply.amountMinor.map { "\($0)" } ?? "", "seq": reply.seq.map { "\($0)" } ?? ""])
                usleep(UInt32(50_000 + random.next() % 250_000))
            } catch .server(let code, let message) where code != "unavailable" {
                // A refusal the application cannot retry its way out of: on the record, never again.
                try? book.append(["t": "answer", "id": asked.id, "kind": asked.kind.rawValue, "state": code, "message": message])
            } catch {
                client = nil
                usleep(30_000)
            }
        }
        print("sell: stopped with \(book.pending.count) unanswered")
    }
}

/// The sale application's journal: each command before it is sent, each answer once it came.
struct SaleJournal {
    struct Intent: Equatable {
        var id: String
        var kind: CreditAudit.Answer.Kind
        var amount: Int64 = 0
        var item: String?

        var command: OperatorCommand {
            switch kind {
            case .spend: .spend(amountMinor: amount, currency: nil, item: item, requestID: id)
            case .refund: .refund(requestID: id)
            case .cancel: .cancel(requestID: id)
            }
        }

        var line: [String: String] {
            ["t": "intent", "id": id, "kind": kind.rawValue, "amount": "\(amount)", "item": item ?? ""]
        }
    }

    let path: String
    private let handle: FileHandle
    private(set) var starts = 0
    private(set) var intents: [Intent] = []
    private(set) var answers: [CreditAudit.Answer] = []
    /// Asked and not answered, oldest first.
    var pending: [Intent] {
        intents.filter { intent in !answers.contains { $0.requestID == intent.id && $0.kind == intent.kind } }
    }
    /// Sales approved and not put back: what a refund may name.
    var refundable: [String] {
        let refunded = Set(answers.filter { $0.kind == .refund }.map(\.requestID))
        let asked = Set(intents.filter { $0.kind == .refund }.map(\.id))
        return answers.filter { $0.kind == .spend && $0.state == "approved" && !refunded.contains($0.requestID) && !asked.contains($0.requestID) }.map(\.requestID)
    }

    init(path: String) throws {
        self.path = path
        if !FileManager.default.fileExists(atPath: path), !FileManager.default.createFile(atPath: path, contents: nil) {
            throw CrashSuiteError("sell: cannot create its journal \(path)")
        }
        guard let handle = FileHandle(forWritingAtPath: path) else { throw CrashSuiteError("sell: cannot open its journal \(path)") }
        handle.seekToEndOfFile()
        self.handle = handle
        for line in try Self.lines(path) { take(line) }
    }

    /// The journal's lines; a torn last line (a SIGKILL mid-write) is left out.
    static func lines(_ path: String) throws -> [[String: String]] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: String]
        }
    }

    /// What the application was told, and the ids it asked without an answer, for the audit.
    static func answers(_ path: String) throws -> (answers: [CreditAudit.Answer], starts: Int, unanswered: Int) {
        var journal = SaleJournalReader()
        for line in try lines(path) { journal.take(line) }
        let unanswered = journal.intents.filter { intent in !journal.answers.contains { $0.requestID == intent.id && $0.kind == intent.kind } }
        // An id asked and never answered is the application's still: on the ledger it is no phantom.
        return (journal.answers + unanswered.map { CreditAudit.Answer(requestID: $0.id, kind: $0.kind, state: "unanswered") }, journal.starts, unanswered.count)
    }

    mutating func append(_ line: [String: String]) throws {
        let data = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) + Data("\n".utf8)
        handle.write(data)
        // Durable before the command is sent: after a crash the application asks it again.
        guard fsync(handle.fileDescriptor) == 0 else { throw CrashSuiteError("sell: fsync of its journal: \(String(cString: strerror(errno)))") }
        take(line)
    }

    private mutating func take(_ line: [String: String]) {
        var reader = SaleJournalReader(starts: starts, intents: intents, answers: answers)
        reader.take(line)
        (starts, intents, answers) = (reader.starts, reader.intents, reader.answers)
    }

    /// A new command: mostly sales, some put back, some coin returns.
    func next(number: Int, random: inout SplitMix64) -> Intent {
        let roll = random.next() % 100
        let prefix = "s\(starts)-\(number)"
        if roll < 15, !refundable.isEmpty {
            return Intent(id: refundable[Int(random.next() % UInt64(refundable.count))], kind: .refund)
        }
        if roll < 35 { return Intent(id: "return-\(prefix)", kind: .cancel) }
        let prices: [Int64] = [5, 10, 15, 25, 35, 50, 75, 100]
        return Intent(id: "sale-\(prefix)", kind: .spend, amount: prices[Int(random.next() % UInt64(prices.count))], item: "slot-\(random.next() % 12)")
    }
}

/// Reads a journal's lines into what they say.
struct SaleJournalReader {
    var starts = 0
    var intents: [SaleJournal.Intent] = []
    var answers: [CreditAudit.Answer] = []

    mutating func take(_ line: [String: String]) {
        switch line["t"] {
        case "start":
            starts += 1
        case "intent":
            guard let id = line["id"], let kind = line["kind"].flatMap(CreditAudit.Answer.Kind.init(rawValue:)) else { return }
            intents.append(SaleJournal.Intent(id: id, kind: kind, amount: Int64(line["amount"] ?? "") ?? 0, item: line["item"].flatMap { $0.isEmpty ? nil : $0 }))
        case "answer":
            guard let id = line["id"], let kind = line["kind"].flatMap(CreditAudit.Answer.Kind.init(rawValue:)), let state = line["state"] else { return }
            answers.append(CreditAudit.Answer(requestID: id, kind: kind, state: state, amountMinor: Int64(line["amount"] ?? ""), seq: Int64(line["seq"] ?? "")))
        default:
            break
        }
    }
}
