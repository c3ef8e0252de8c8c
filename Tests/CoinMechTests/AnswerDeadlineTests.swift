import CoinMechDaemon
import CoinMechSources
import Testing

@Suite("Answer deadline: what may still be credited, what was answered late")
struct AnswerDeadlineTests {
    let deadline = AnswerDeadline(deadlineMilliseconds: 50, commitAllowanceMilliseconds: 10)
    let arrived: UInt64 = 1_000_000_000

    @Test("an accept may be credited until the deadline less the commit allowance, not after")
    func canCredit() {
        #expect(deadline.canCredit(receivedAt: arrived, now: arrived))
        #expect(deadline.canCredit(receivedAt: arrived, now: arrived + 40_000_000))
        #expect(!deadline.canCredit(receivedAt: arrived, now: arrived + 40_000_001))
        #expect(!deadline.canCredit(receivedAt: arrived, now: arrived + 80_000_000))
    }

    @Test("an answer after the deadline is late by the difference; at or before it, in time")
    func lateBy() {
        #expect(deadline.lateBy(receivedAt: arrived, answeredAt: arrived + 50_000_000) == nil)
        #expect(deadline.lateBy(receivedAt: arrived, answeredAt: arrived + 12_000_000) == nil)
        #expect(deadline.lateBy(receivedAt: arrived, answeredAt: arrived + 53_500_000) == 3_500_000)
    }

    @Test("the answer's time on the line counts against the deadline: 18 bytes at 9600 baud take 18.75 ms")
    func transit() {
        let transit = SerialMech.transitNanoseconds(bytes: 18, baud: 9600)
        #expect(transit == 18_750_000)
        #expect(SerialMech.transitNanoseconds(bytes: 18, baud: 115_200) == 1_562_500)
        #expect(deadline.canCredit(receivedAt: arrived, now: arrived + 21_250_000, transit: transit))
        #expect(!deadline.canCredit(receivedAt: arrived, now: arrived + 21_250_001, transit: transit))
        #expect(deadline.lateBy(receivedAt: arrived, answeredAt: arrived + 31_250_000, transit: transit) == nil)
        #expect(deadline.lateBy(receivedAt: arrived, answeredAt: arrived + 40_000_000, transit: transit) == 8_750_000)
    }
}
