import ArgumentParser
import CoinMechLedger
import CoinMechModel
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `coinmech-bench commit`: what one ledger commit costs now that every commit is synced, on
/// the disk of a given directory and on tmpfs (/dev/shm) in the same run, beside the bare
/// fdatasync of 4 KiB that SQLite's WAL commit cannot go below, and the decision journal's
/// append of the same decision (what the mech waits for instead, since the journal).
struct CommitBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "commit",
        abstract: "Ledger commit latency (one pending accept per commit, WAL synced) on a disk directory and on tmpfs, with the bare fdatasync floor.")

    @Option(help: "A directory on the disk to measure (default: /var/tmp).") var dir = "/var/tmp"
    @Option(help: "The tmpfs directory to compare with.") var tmpfs = "/dev/shm"
    @Option(help: "Commits per directory.") var commits = 2000
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    struct Figures: Encodable {
        let where_: String
        let commit_p50_us: Int
        let commit_p99_us: Int
        let commit_max_us: Int
        let journal_p50_us: Int
        let journal_p99_us: Int
        let fdatasync_p50_us: Int
        let fdatasync_p99_us: Int
        let synchronous: Int
        enum CodingKeys: String, CodingKey {
            case where_ = "where", commit_p50_us, commit_p99_us, commit_max_us, journal_p50_us, journal_p99_us, fdatasync_p50_us, fdatasync_p99_us, synchronous
        }
    }

    func run() throws {
        var results: [Figures] = []
        for base in [dir, tmpfs] {
            let work = "\(base)/coinmech-commit-\(getpid())"
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: work) }
            let floor = try fdatasyncFloor(file: "\(work)/floor", count: commits)
            let ledger = try Ledger(directory: work)
            let journal = try DecisionJournal(directory: work)
            var samples: [Int] = []
            var journalSamples: [Int] = []
            samples.reserveCapacity(commits)
            journalSamples.reserveCapacity(commits)
            for seq in 1...commits {
                let record = DecisionRecord(source: "serial", epoch: 1, deviceSeq: UInt64(seq), diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75,
                                            channel: nil, verdict: .accept(currency: "USD", code: "quarter", valueMinor: 25), link: "usd", chainGeneration: 1)
                let journalled = DispatchTime.now().uptimeNanoseconds
                try journal.append([record])
                let start = DispatchTime.now().uptimeNanoseconds
                journalSamples.append(Int((start - journalled) / 1000))
                try ledger.append([.decision(record, credit: .onConfirmation)])
                samples.append(Int((DispatchTime.now().uptimeNanoseconds - start) / 1000))
                journal.trim()
            }
            samples.sort()
            journalSamples.sort()
            results.append(Figures(where_: "\(base) (\(Self.filesystem(of: work)))", commit_p50_us: percentile(samples, 0.5), commit_p99_us: percentile(samples, 0.99),
                                   commit_max_us: samples.last ?? 0, journal_p50_us: percentile(journalSamples, 0.5),
                                   journal_p99_us: percentile(journalSamples, 0.99), fdatasync_p50_us: percentile(floor, 0.5), fdatasync_p99_us: percentile(floor, 0.99),
                                   synchronous: try ledger.writerSynchronous()))
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(results), as: UTF8.self))
            return
        }
        print("ledger commit, one pending accept each (\(commits) per directory), µs")
        print("  where                                  commit p50   p99     max   journal append p50   p99   fdatasync 4 KiB p50   p99   synchronous")
        for figures in results {
            print("  \(figures.where_.padding(toLength: 38, withPad: " ", startingAt: 0)) \(pad(figures.commit_p50_us))\(pad(figures.commit_p99_us))\(pad(figures.commit_max_us))"
                + "   \(pad(figures.journal_p50_us, 13))\(pad(figures.journal_p99_us))"
                + "   \(pad(figures.fdatasync_p50_us, 14))\(pad(figures.fdatasync_p99_us))   \(figures.synchronous == 2 ? "FULL" : String(figures.synchronous))")
        }
    }

    /// µs of a 4 KiB overwrite made durable with fdatasync, as SQLite syncs a reused WAL.
    private func fdatasyncFloor(file: String, count: Int) throws -> [Int] {
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw ValidationError("cannot create \(file): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let page = [UInt8](repeating: 0x55, count: 4096)
        _ = pwrite(fd, page, page.count, 0)
        fsync(fd)
        var samples: [Int] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = pwrite(fd, page, page.count, 0)
            fdatasync(fd)
            samples.append(Int((DispatchTime.now().uptimeNanoseconds - start) / 1000))
        }
        return samples.sorted()
    }

    /// The type of the filesystem holding `path`: the longest mount point of /proc/mounts above it.
    private static func filesystem(of path: String) -> String {
        guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return "?" }
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var best = (length: -1, type: "?")
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 2 else { continue }
            let point = String(fields[1])
            let under = point == "/" || resolved == point || resolved.hasPrefix(point + "/")
            if under, point.count > best.length { best = (point.count, String(fields[2])) }
        }
        return best.type
    }

}
