import CLinux
import CoinMechHarness
import CoinMechLedger
import CoinMechModel
@testable import CoinMechTestSupport
import Foundation
import Testing

/// The decision journal's descriptor has one owner. When its allocation failed, `init` closed it
/// and `deinit` (which runs for a class whose `init` throws once every property is set) closed
/// the same number again: in the daemon, whatever another thread had opened under that number
/// meanwhile — a client's socket, a plugin host's channel. Only the system calls show it, so
/// this test traces its own thread with strace.
@Suite("Decision journal: one owner for its descriptor", .serialized)
struct JournalDescriptorTests {
    @Test("a journal whose allocation fails closes its descriptor once", .enabled(if: geteuid() == 0, "strace attaches to this process: root"))
    func closedOnce() throws {
        let dir = TestSupport.temporaryDirectory("journal-full")
        // Every write to /dev/full fails (ENOSPC): the allocation of zeros does.
        #expect(symlink("/dev/full", DecisionJournal.path(directory: dir)) == 0)
        let tid = cm_gettid()
        let trace = "\(dir)/strace.log"
        let tracer = try ChildProcess("/usr/bin/strace", ["-f", "-q", "-e", "trace=openat,close", "-o", trace, "-p", String(getpid())], absolute: true)
        // Traced once this thread has strace as its tracer.
        try TestSupport.waitUntil("strace to attach to this thread", timeout: 30) {
            let status = (try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8)) ?? ""
            return status.split(separator: "\n").contains { $0.hasPrefix("TracerPid:") && !$0.hasSuffix("\t0") }
        }
        #expect(throws: LedgerError.self) { _ = try DecisionJournal(directory: dir) }
        tracer.signal(SIGINT)
        #expect(tracer.wait(timeout: 30) != nil, "strace did not detach")

        // This thread's lines: "TID openat(…decisions.journal…) = N", then its closes of N.
        let mine = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("\(tid) ") }
        let opened = try #require(mine.firstIndex { $0.contains("decisions.journal") && $0.contains("openat(") }, "\(mine)")
        let descriptor = try #require(mine[opened].split(separator: "=").last.flatMap { Int32($0.trimmingCharacters(in: .whitespaces)) })
        let closes = mine[(opened + 1)...].filter { $0.contains("close(\(descriptor))") }
        #expect(closes.count == 1, "closed \(closes.count) times: \(closes)")
        #expect(!closes.contains { $0.contains("EBADF") }, "\(closes)")
    }
}
