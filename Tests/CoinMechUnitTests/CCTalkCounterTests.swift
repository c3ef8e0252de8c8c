import CoinMechCCTalk
import Testing

/// The rule that turns the credit buffer into ledger entries, on hand-made buffers.
@Suite("ccTalk event counter: first start, 0 → 1, wrap, restarts seen and unseen, gaps")
struct CCTalkCounterTests {
    static func credit(_ position: Int) -> BufferedResult { .credit(position: position, sorterPath: 1) }

    /// A buffer with `counter` and these results (newest first), padded with empty slots.
    static func buffer(_ counter: UInt8, _ results: [BufferedResult]) -> CreditBuffer {
        CreditBuffer(counter: counter, results: results + Array(repeating: .null, count: CreditBuffer.depth - results.count))
    }

    static func state(epoch: UInt64 = 0, number: UInt64, _ buffer: CreditBuffer, serial: UInt32? = 7) -> CCTalkCounterState {
        CCTalkCounterState(epoch: epoch, eventNumber: number, lastResults: buffer.resultBytes, serialNumber: serial)
    }

    func read(_ state: CCTalkCounterState?, _ buffer: CreditBuffer, serial: UInt32? = 7) -> CreditBufferTracker.Advance? {
        CreditBufferTracker.advance(state, buffer: buffer, serialNumber: serial)
    }

    func credits(_ advance: CreditBufferTracker.Advance?) -> [UInt64] {
        advance?.entries.compactMap { if case .credit(let event) = $0 { event.number } else { nil } } ?? []
    }

    @Test("first start with an empty buffer records counter 0, so the first coin will be credited")
    func firstStartEmpty() throws {
        let advance = try #require(read(nil, Self.buffer(0, [])))
        #expect(advance.entries.isEmpty)
        #expect(advance.state == Self.state(number: 0, Self.buffer(0, [])))
        #expect(!advance.restarted)
    }

    @Test("events already in the buffer at the first start are backlog: recorded, never credited")
    func firstStartBacklog() throws {
        let results = [Self.credit(1), Self.credit(2), .error(CoinAcceptorError(code: 1)), Self.credit(4), Self.credit(1)]
        let advance = try #require(read(nil, Self.buffer(37, results)))
        let backlog = advance.entries.compactMap { if case .backlog(let event) = $0 { event } else { nil } }
        #expect(backlog.map(\.number) == [33, 34, 35, 36, 37])
        #expect(backlog.map(\.result) == results.reversed())
        #expect(credits(advance).isEmpty)
        #expect(advance.state.eventNumber == 37 && advance.state.counter == 37)
    }

    @Test("a fresh device's first coin, counter 0 → 1, is credited (qt-cctalk's 'last == 0' check skips it)")
    func zeroToOne() throws {
        // qt-cctalk treats every event seen while its last counter is 0 as a start-up event and
        // credits nothing; here counter 0 is a recorded state, distinct from "never seen".
        let fresh = try #require(read(nil, Self.buffer(0, []))).state
        let first = try #require(read(fresh, Self.buffer(1, [Self.credit(3)])))
        #expect(credits(first) == [1])
        #expect(first.entries == [.credit(CCTalkBufferedEvent(epoch: 0, number: 1, result: Self.credit(3)))])
        // And 0 → 3 credits all three.
        let three = try #require(read(fresh, Self.buffer(3, [Self.credit(1), Self.credit(2), Self.credit(3)])))
        #expect(credits(three) == [1, 2, 3])
        #expect(three.entries.compactMap { if case .credit(let e) = $0 { e.result } else { nil } } == [Self.credit(3), Self.credit(2), Self.credit(1)])
    }

    @Test("the counter wraps 255 → 1: numbers go on, nothing is lost")
    func wrap() throws {
        let before = Self.buffer(254, [Self.credit(1), Self.credit(2), Self.credit(3), Self.credit(4), Self.credit(1)])
        let state = Self.state(number: 254, before)
        let after = Self.buffer(3, [Self.credit(4), Self.credit(3), Self.credit(2), Self.credit(1), Self.credit(1)])
        let advance = try #require(read(state, after))
        #expect(credits(advance) == [255, 256, 257, 258])
        let counters = advance.entries.compactMap { if case .credit(let e) = $0 { e.counter } else { nil } }
        #expect(counters == [255, 1, 2, 3])
        #expect(advance.state.counter == 3 && advance.state.eventNumber == 258)
        #expect(!advance.restarted)
    }

    @Test("more than five new events: the newest five are credited, the others recorded as lost")
    func gap() throws {
        let before = Self.buffer(250, [Self.credit(1), Self.credit(1), Self.credit(1), Self.credit(1), Self.credit(1)])
        let state = Self.state(number: 250, before)
        let after = Self.buffer(4, [Self.credit(2), Self.credit(2), Self.credit(2), Self.credit(2), Self.credit(2)])  // 9 events later
        let advance = try #require(read(state, after))
        #expect(advance.entries.first == .lost(epoch: 0, numbers: 251...254))
        #expect(credits(advance) == [255, 256, 257, 258, 259])
    }

    @Test("counter 0 after non-zero: the device restarted; a new epoch starts at 0")
    func restartSeen() throws {
        let state = Self.state(epoch: 2, number: 17, Self.buffer(17, [Self.credit(1)]))
        let advance = try #require(read(state, Self.buffer(0, [])))
        #expect(advance.entries == [.restarted(epoch: 3, cause: .counterZero)])
        #expect(advance.state.epoch == 3 && advance.state.eventNumber == 0)
        #expect(advance.restarted)
        let next = try #require(read(advance.state, Self.buffer(1, [Self.credit(2)])))
        #expect(next.entries == [.credit(CCTalkBufferedEvent(epoch: 3, number: 1, result: Self.credit(2)))])
    }

    @Test("a restart nobody saw: the counter went back and the slots after it are empty")
    func restartUnseenEmptyTail() throws {
        let state = Self.state(number: 17, Self.buffer(17, [Self.credit(1), Self.credit(1), Self.credit(1), Self.credit(1), Self.credit(1)]))
        let advance = try #require(read(state, Self.buffer(2, [Self.credit(3), Self.credit(4)])))
        #expect(advance.entries.first == .restarted(epoch: 1, cause: .bufferRestarted))
        #expect(credits(advance) == [1, 2])
        #expect(advance.state.epoch == 1 && advance.restarted)
        // Also when the recorded state has no buffer (an older ledger): the empty tail tells.
        var legacy = state
        legacy.lastResults = []
        #expect(credits(read(legacy, Self.buffer(2, [Self.credit(3), Self.credit(4)]))) == [1, 2])
    }

    @Test("a restart nobody saw: the older slots do not repeat the buffer recorded")
    func restartUnseenMismatch() throws {
        let recorded = Self.buffer(3, [Self.credit(3), Self.credit(2), Self.credit(1)])
        let state = Self.state(number: 3, recorded)
        // Continuing would put 3, 2, 1 behind the new event; this buffer is four new coins.
        let advance = try #require(read(state, Self.buffer(4, [Self.credit(4), Self.credit(4), Self.credit(4), Self.credit(4)])))
        #expect(advance.entries.first == .restarted(epoch: 1, cause: .bufferRestarted))
        #expect(credits(advance) == [1, 2, 3, 4])
        // The same counter with other events is a restart too.
        let same = try #require(read(state, Self.buffer(3, [Self.credit(4), Self.credit(4), Self.credit(4)])))
        #expect(same.restarted && credits(same) == [1, 2, 3])
        // While a buffer that does continue is read as one.
        let continued = try #require(read(state, Self.buffer(4, [Self.credit(4), Self.credit(3), Self.credit(2), Self.credit(1)])))
        #expect(!continued.restarted && credits(continued) == [4])
    }

    @Test("nothing new, nothing recorded; a batch read twice yields nothing the second time")
    func unchanged() throws {
        let recorded = Self.buffer(9, [Self.credit(1), Self.credit(2), Self.credit(3), Self.credit(4), Self.credit(1)])
        #expect(read(Self.state(number: 9, recorded), recorded) == nil)
        let fresh = Self.state(number: 0, Self.buffer(0, []))
        #expect(read(fresh, Self.buffer(0, [])) == nil)
        let once = try #require(read(fresh, Self.buffer(2, [Self.credit(1), Self.credit(2)])))
        #expect(read(once.state, Self.buffer(2, [Self.credit(1), Self.credit(2)])) == nil)
    }

    @Test("another device at the address: a new epoch, its buffer is backlog")
    func otherDevice() throws {
        let state = Self.state(number: 40, Self.buffer(40, [Self.credit(1)]), serial: 7)
        let advance = try #require(read(state, Self.buffer(12, [Self.credit(2), Self.credit(2), Self.credit(2), Self.credit(2), Self.credit(2)]), serial: 8))
        #expect(advance.entries.first == .restarted(epoch: 1, cause: .otherDevice(previous: 7, now: 8)))
        #expect(credits(advance).isEmpty)
        #expect(advance.entries.count == 6)
        #expect(advance.state.serialNumber == 8 && advance.state.epoch == 1 && advance.state.eventNumber == 12)
    }

    @Test("error events are recorded with their names, never credited")
    func errors() throws {
        let fresh = Self.state(number: 0, Self.buffer(0, []))
        let advance = try #require(read(fresh, Self.buffer(2, [.error(CoinAcceptorError(code: 17)), Self.credit(1)])))
        #expect(credits(advance) == [1])
        guard case .error(let event, let error) = advance.entries.last else {
            Issue.record("no error entry: \(advance.entries)")
            return
        }
        #expect(event.number == 2 && error.name == "Coin going backwards")
    }
}
