import CoinMechCore
import CoinMechModel
import Testing

@Suite("Plugin health review: an outage recorded once, lifted once, and the first one inhibits")
struct PluginHealthReviewTests {
    static func out(_ link: String, _ state: String = "quarantined", since: Double = 100) -> PluginHealthReview.OutOfService {
        .init(link: link, state: state, cause: "crash", reason: "SIGSEGV in validate", since: since, plugin: "lib\(link).so", sha256: "ab")
    }

    @Test("a new outage is recorded and inhibits; the same outage reviewed again records nothing")
    func recordedOnce() {
        var review = PluginHealthReview()
        let first = review.review([Self.out("coin-table"), Self.out("sanity", "hung")], generation: 3)
        #expect(first.inhibit == "link 'coin-table' is quarantined: SIGSEGV in validate")
        #expect(first.record == [
            .quarantined(.init(link: "coin-table", state: "quarantined", cause: "crash", reason: "SIGSEGV in validate", generation: 3,
                               plugin: "libcoin-table.so", sha256: "ab")),
            .quarantined(.init(link: "sanity", state: "hung", cause: "crash", reason: "SIGSEGV in validate", generation: 3,
                               plugin: "libsanity.so", sha256: "ab")),
        ])
        let again = review.review([Self.out("coin-table"), Self.out("sanity", "hung")], generation: 3)
        #expect(again.record.isEmpty)
        #expect(again.inhibit == first.inhibit)
    }

    @Test("a link put back is recorded as lifted; a later outage of it is recorded again")
    func liftedThenAgain() {
        var review = PluginHealthReview()
        _ = review.review([Self.out("coin-table")], generation: 1)
        let lifted = review.review([], generation: 2)
        #expect(lifted.record == [.quarantineLifted(link: "coin-table", generation: 2)])
        #expect(lifted.inhibit == nil)
        let again = review.review([Self.out("coin-table", since: 200)], generation: 2)
        #expect(again.record.count == 1)
        // The same link out of service again, without a reload between (a new time): a new record.
        let newer = review.review([Self.out("coin-table", since: 300)], generation: 2)
        #expect(newer.record.count == 1)
    }
}
