/// The pure rule that turns a coin acceptor's buffer (header 229) into ledger entries,
/// each event exactly once, given the counter state last recorded.
///
/// - No state (the host never recorded this device): the buffer's events happened before;
///   they are recorded as backlog, never credited. A counter of 0 is recorded too, so that a
///   fresh device's first coin (0 → 1) *is* credited, even across a restart in between.
/// - Counter unchanged, buffer unchanged: nothing.
/// - Counter 0 after non-zero: the device restarted (`counterZero`): a new epoch.
/// - Counter moved by d (with the wrap 255 → 1): the newest d events are new (d ≤ 5), or the
///   newest 5 are and d − 5 were lost (d > 5).
/// - A reset the host announced (`expectsRestart`) makes a buffer with no overlap a new session
///   (one with d < 5 still has to repeat the recorded slots, so no old credit is read as new).
/// - Unless the buffer shows the device restarted while nobody looked (`bufferRestarted`):
///   for d < 5 the older slots must repeat the recorded ones; a counter that went back to
///   c ≤ 5 with empty slots after the c-th is a new session, not a wrap (a wrapped buffer is
///   full). Its events then count from 1 in a new epoch.
public enum CreditBufferTracker {
    public struct Advance: Sendable, Hashable {
        public var state: CCTalkCounterState
        public var entries: [CCTalkLedgerEntry]
        /// The device started again (or another one took its place): set it up again.
        public var restarted: Bool
    }

    /// What reading `buffer` from the device with `serialNumber` changes after `state`; nil if
    /// nothing does.
    public static func advance(_ state: CCTalkCounterState?, buffer: CreditBuffer, serialNumber: UInt32?) -> Advance? {
        let counter = buffer.counter
        let results = buffer.resultBytes
        guard var state, sameDevice(state.serialNumber, serialNumber) else {
            // First meeting, or another device in the place of the one recorded.
            let epoch = state.map { $0.epoch + 1 } ?? 0
            var entries: [CCTalkLedgerEntry] = []
            if let state { entries.append(.restarted(epoch: epoch, cause: .otherDevice(previous: state.serialNumber, now: serialNumber))) }
            entries += events(buffer, epoch: epoch, last: UInt64(counter), count: UInt64(counter)).map(CCTalkLedgerEntry.backlog)
            let after = CCTalkCounterState(epoch: epoch, eventNumber: UInt64(counter), lastResults: results, serialNumber: serialNumber)
            return Advance(state: after, entries: entries, restarted: state != nil)
        }
        let before = state
        if state.serialNumber == nil { state.serialNumber = serialNumber }
        let last = state.counter
        let known = state.lastResults.count == 2 * CreditBuffer.depth

        if counter == 0 {
            state.lastResults = results
            if last == 0 && !state.expectsRestart { return state == before ? nil : Advance(state: state, entries: [], restarted: false) }
            state.epoch += 1
            state.eventNumber = 0
            state.expectsRestart = false
            return Advance(state: state, entries: [.restarted(epoch: state.epoch, cause: .counterZero)], restarted: true)
        }
        if counter == last {
            if !known || state.lastResults == results { return state == before ? nil : Advance(state: state, entries: [], restarted: false) }
            return newSession(state, buffer)  // same count, other events: it started again and got as far
        }
        let distance = CreditBuffer.distance(from: last, to: counter)
        let continues: Bool
        if distance < CreditBuffer.depth, known {
            continues = Array(results[(2 * distance)...]) == Array(state.lastResults[..<(2 * (CreditBuffer.depth - distance))])
        } else if state.expectsRestart {
            // A reset was announced and the buffer holds only events after the last recorded:
            // a new session. (Had the reset not happened, these would still all be new events.)
            continues = false
        } else if counter < last, Int(counter) < CreditBuffer.depth {
            continues = !buffer.results[Int(counter)...].allSatisfy(\.isNull)
        } else {
            continues = true
        }
        guard continues else { return newSession(state, buffer) }
        let newLast = state.eventNumber + UInt64(distance)
        var entries = lost(epoch: state.epoch, first: state.eventNumber + 1, last: newLast)
        entries += events(buffer, epoch: state.epoch, last: newLast, count: UInt64(distance)).map(classify)
        state.eventNumber = newLast
        state.lastResults = results
        return Advance(state: state, entries: entries, restarted: false)
    }

    /// The buffer is a session that started while nobody polled: its events count from 1.
    private static func newSession(_ previous: CCTalkCounterState, _ buffer: CreditBuffer) -> Advance {
        var state = previous
        state.epoch += 1
        state.expectsRestart = false
        state.eventNumber = UInt64(buffer.counter)
        state.lastResults = buffer.resultBytes
        var entries: [CCTalkLedgerEntry] = [.restarted(epoch: state.epoch, cause: .bufferRestarted)]
        entries += lost(epoch: state.epoch, first: 1, last: state.eventNumber)
        entries += events(buffer, epoch: state.epoch, last: state.eventNumber, count: state.eventNumber).map(classify)
        return Advance(state: state, entries: entries, restarted: true)
    }

    /// The events numbered `last − count + 1 … last` that the buffer still holds (its newest
    /// min(count, 5)), oldest first.
    static func events(_ buffer: CreditBuffer, epoch: UInt64, last: UInt64, count: UInt64) -> [CCTalkBufferedEvent] {
        let held = min(count, UInt64(CreditBuffer.depth))
        guard held > 0 else { return [] }
        return (0..<held).reversed().map { slot in
            CCTalkBufferedEvent(epoch: epoch, number: last - slot, result: buffer.results[Int(slot)])
        }
    }

    /// Events `first … last` beyond the buffer's depth: the ones it no longer holds.
    static func lost(epoch: UInt64, first: UInt64, last: UInt64) -> [CCTalkLedgerEntry] {
        let depth = UInt64(CreditBuffer.depth)
        guard last >= first, last - first + 1 > depth else { return [] }
        return [.lost(epoch: epoch, numbers: first...(last - depth))]
    }

    static func classify(_ event: CCTalkBufferedEvent) -> CCTalkLedgerEntry {
        switch event.result.meaning {
        case .credit: .credit(event)
        case .error(let error): .error(event, error)
        case .invalid: .invalid(event)
        }
    }

    /// Both serial numbers known and different means another device.
    static func sameDevice(_ recorded: UInt32?, _ now: UInt32?) -> Bool {
        guard let recorded, let now else { return true }
        return recorded == now
    }
}
