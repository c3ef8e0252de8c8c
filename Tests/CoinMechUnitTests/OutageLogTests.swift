@testable import CoinMechTestSupport
import Testing

@Suite("The tests' reading of an outage in a daemon's log")
struct OutageLogTests {
    static let failure = "could not record"
    static let recovery = "recorded again"

    @Test("once, or again after each recovery, is once per outage", arguments: [
        "<2>could not record\n<7>could not record\n<7>could not record",
        "<2>could not record\n<5>recorded again\n<2>could not record",
        "<2>could not record\n<5>recorded again",
    ])
    func oncePerOutage(log: String) {
        #expect(OutageLog(log, failure: Self.failure, recovery: Self.recovery).saidOncePerOutage)
    }

    @Test("never said, said twice with no recovery between, or a recovery first is not", arguments: [
        "<6>started\n<7>could not record",
        "<2>could not record\n<2>could not record",
        "<2>could not record\n<5>recorded again\n<2>could not record\n<2>could not record",
        "<5>recorded again\n<2>could not record",
    ])
    func notOncePerOutage(log: String) {
        #expect(!OutageLog(log, failure: Self.failure, recovery: Self.recovery).saidOncePerOutage)
    }
}
