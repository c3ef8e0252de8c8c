@testable import CoinMechSupport
import Foundation
import Synchronization
import Testing

@Suite("Named threads: the system thread carries the name from the thread's first line")
struct ThreadNameTests {
    /// Foundation's `Thread.name` setter names the system thread only once `start()` has stored
    /// its handle, which a new thread that runs first does not see: about 3 in 100 threads kept
    /// their creator's name on this machine, and a test that looked for "deciding" found none.
    @Test("every one of 500 threads started at once reads its own name in /proc")
    func everyThreadIsNamed() throws {
        let count = 500
        let unnamed = Mutex<[String]>([])
        let finished = DispatchSemaphore(value: 0)
        for index in 0..<count {
            let name = "named-\(index % 1000)"
            Thread.startNamed(name) {
                let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .newlines) ?? "(unreadable)"
                if comm != name { unnamed.withLock { $0.append("\(name) read \(comm)") } }
                finished.signal()
            }
        }
        for _ in 0..<count {
            try #require(finished.wait(timeout: .now() + 30) == .success, "a named thread did not finish in 30 s")
        }
        let missed = unnamed.withLock { $0 }
        #expect(missed.isEmpty, "\(missed.count) of \(count) threads were not named: \(missed.prefix(5))")
    }

    @Test("a name past Linux's 15 bytes is cut to 15, not refused")
    func longNameIsCut() throws {
        let read = Mutex<String?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Thread.startNamed("a-name-of-twenty-bytes") {
            read.withLock { $0 = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) }
            finished.signal()
        }
        try #require(finished.wait(timeout: .now() + 30) == .success)
        #expect(read.withLock { $0 } == "a-name-of-twent\n")
    }
}
