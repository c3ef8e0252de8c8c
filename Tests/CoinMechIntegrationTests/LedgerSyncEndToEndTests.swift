import Foundation
import Testing

/// The order of the daemon's own system calls, traced by strace: the decision reaches the disk
/// (the decision journal, or the ledger's WAL for a batch committed first) before the mech
/// hears "accept". kill -9 cannot tell a synced commit from one in the
/// page cache; only the system calls (and a real power cut, `make test-vm`) can.
@Suite("Ledger sync end to end: the decision journal or the WAL is synced before every accept", .serialized)
struct LedgerSyncEndToEndTests {
    /// One traced system call, with the time it started.
    struct Call {
        var time: Double
        var name: String
        /// The file of its first argument, as `strace -y` names it.
        var file: String
        var text: String
    }

    /// `strace -f -ttt -y -s 256` lines: a call split by another thread's (`<unfinished ...>`)
    /// is taken at its start, where its descriptor is named.
    static func calls(_ trace: String) -> [Call] {
        trace.split(separator: "\n").compactMap { line -> Call? in
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3, let time = Double(fields[1]), !fields[2].hasPrefix("<...") else { return nil }
            let call = fields[2]
            guard let open = call.firstIndex(of: "(") else { return nil }
            let name = String(call[..<open])
            var file = ""
            if let lt = call[open...].firstIndex(of: "<"), let gt = call[lt...].firstIndex(of: ">") {
                file = String(call[call.index(after: lt)..<gt])
            }
            return Call(time: time, name: name, file: file, text: String(call))
        }
    }

    @Test("every accept the daemon writes to the mech follows an fsync or fdatasync of the decision journal or the ledger's WAL made after the reading was read")
    func walSyncedBeforeEveryAccept() throws {
        let harness = try DaemonHarness()
        // strace slows every system call: the mech waits 500 ms (and is told so), so that the
        // coins are still accepted, not returned at the deadline.
        try """
            log_level: info
            source: {kind: serial, device: mech, baud: 9600, deadline_ms: 500}
            state_dir: state
            runtime_dir: run
            cache_dir: cache
            \(DaemonHarness.defaultChain)
            """.write(toFile: harness.config, atomically: true, encoding: .utf8)
        try harness.startSimulator("coins: 12\nrate_per_s: 4\nseed: 11\ndeadline_ms: 500\nmix: {quarter: 1, dime: 1}\n")
        let trace = "\(harness.dir)/strace.log"
        try harness.startDaemon(wrapper: ["/usr/bin/strace", "-f", "-ttt", "-y", "-s", "256", "-o", trace,
                                          "-e", "trace=read,write,fsync,fdatasync,sync_file_range"])
        let truth = try harness.simulatorTruth()
        // SIGTERM to the daemon, not to strace (which would detach and leave it running);
        // strace then exits with the daemon's status.
        let tracer = try #require(harness.daemon).pid
        let children = try String(contentsOfFile: "/proc/\(tracer)/task/\(tracer)/children", encoding: .utf8)
        let traced = try #require(children.split(separator: " ").first.flatMap { pid_t($0) }, "strace has no child")
        kill(traced, SIGTERM)
        #expect(try harness.stopDaemon(0) == 0, "\(harness.daemonLog)")
        #expect(truth.outcomes.accepted >= 6, "the mech had too few coins accepted to judge: \(truth.outcomes)")

        let calls = Self.calls(try String(contentsOfFile: trace, encoding: .utf8))
        let isMech = { (call: Call) in call.file.hasPrefix("/dev/pts/") }
        let isSync = { (call: Call) in ["fsync", "fdatasync", "sync_file_range"].contains(call.name) }
        let isWALSync = { (call: Call) in isSync(call) && call.file.hasSuffix("/state/ledger.sqlite3-wal") }
        let isJournalSync = { (call: Call) in isSync(call) && call.file.hasSuffix("/state/decisions.journal") }
        var lastRead: Double?
        var lastSync: Double?
        var lastWasJournal = false
        var accepts = 0
        var viaJournal = 0
        var unsynced: [String] = []
        for call in calls.sorted(by: { $0.time < $1.time }) {
            if call.name == "read", isMech(call) { lastRead = call.time }
            if isWALSync(call) || isJournalSync(call) {
                lastSync = call.time
                lastWasJournal = isJournalSync(call)
            }
            guard call.name == "write", isMech(call), call.text.contains("$CMD,"), call.text.contains(",A*") else { continue }
            accepts += 1
            if lastWasJournal { viaJournal += 1 }
            if let read = lastRead, (lastSync ?? 0) < read { unsynced.append(call.text) }
        }
        #expect(accepts >= truth.outcomes.accepted, "traced \(accepts) accept answers, the mech heard \(truth.outcomes.accepted) in time")
        #expect(unsynced.isEmpty, "accepts written with no sync since the reading was read: \(unsynced.prefix(3)); \(calls.filter(isWALSync).count) WAL syncs, \(calls.filter(isJournalSync).count) journal syncs in the trace")
        // A coin's reading comes alone: its accept waits for the journal's sync, not the WAL's.
        #expect(viaJournal > 0, "no accept followed a sync of the decision journal: \(accepts) accepts")
        let audit = try harness.audit()
        #expect(audit.isClean, "\(audit.problems)")
    }
}
