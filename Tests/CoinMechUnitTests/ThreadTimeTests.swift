@testable import CoinMechDaemon
@testable import CoinMechSupport
@testable import CoinMechTestSupport
import Foundation
import Synchronization
import Testing

@Suite("A thread's own time: its CPU time, and the wall clock while asleep in a call it made")
struct ThreadTimeTests {
    @Test("the state letter is read after the last ')', since a thread's name may hold one")
    func statLine() {
        func state(_ line: String) -> ThreadTime.State? { ThreadTime.state(ofStatLine: ArraySlice(Array(line.utf8))) }
        #expect(state("4242 (deciding) R 1 4242 4242 0 -1") == .runnable)
        #expect(state("4242 (a) b) S 1 4242") == .asleep)
        #expect(state("4242 (x) D 1") == .uninterruptible)
        #expect(state("4242 (x) T 1") == .stopped)
        #expect(state("4242 (x) t 1") == .stopped)
        #expect(state("4242 (x) Z 1") == nil)
        #expect(state("4242 (x)") == nil)
        #expect(state("no parenthesis at all") == nil)
    }

    @Test("a thread waiting on a semaphore is asleep; a busy one is runnable and its CPU time grows")
    func liveThreads() throws {
        let asleep = Mutex<ThreadTime?>(nil)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let sleeper = Thread {
            asleep.withLock { $0 = .current() }
            release.wait()
            done.signal()
        }
        sleeper.start()
        var sleeping: ThreadTime?
        try TestSupport.waitUntil("the sleeping thread to start") {
            sleeping = asleep.withLock { $0 }
            return sleeping != nil
        }
        try TestSupport.waitUntil("the thread to fall asleep") { sleeping?.state() == .asleep }
        release.signal()
        done.wait()

        let busy = Mutex<ThreadTime?>(nil)
        let stop = Atomic<Bool>(false)
        let spinner = Thread {
            busy.withLock { $0 = .current() }
            while !stop.load(ordering: .relaxed) {}
            done.signal()
        }
        spinner.start()
        // Stopped however the test ends: a spinner left running would burn a core for the rest of the run.
        defer { stop.store(true, ordering: .relaxed) }
        var spinning: ThreadTime?
        try TestSupport.waitUntil("the busy thread to start") {
            spinning = busy.withLock { $0 }
            return spinning != nil
        }
        let first = try #require(spinning?.cpuNanoseconds())
        try TestSupport.waitUntil("the busy thread to use 20 ms of CPU") { (spinning?.cpuNanoseconds() ?? 0) > first + 20_000_000 }
        #expect(spinning?.state() == .runnable)
    }

    @Test("a look counts the wall clock while asleep, the CPU time while runnable or waiting for the disk, nothing while stopped")
    func ownTime() {
        #expect(HangWatch.ownTime(wall: 2_500_000, cpu: 40_000, state: .asleep) == 2_500_000)
        #expect(HangWatch.ownTime(wall: 2_500_000, cpu: 3_000, state: .uninterruptible) == 3_000)
        #expect(HangWatch.ownTime(wall: 2_500_000, cpu: 40_000, state: .runnable) == 40_000)
        #expect(HangWatch.ownTime(wall: 2_500_000, cpu: 9_000_000, state: .runnable) == 2_500_000)
        #expect(HangWatch.ownTime(wall: 2_500_000, cpu: 40_000, state: .stopped) == 0)
        #expect(HangWatch.ownTime(wall: 2_500_000, cpu: nil, state: nil) == 2_500_000)
    }
}
