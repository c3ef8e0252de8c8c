import CoinMechConfiguration
import CoinMechDaemon
import CoinMechModel
import CoinMechSettings
@testable import CoinMechTestSupport
import Testing

@Suite("source.standing_credit: what becomes of credit nobody used")
struct StandingCreditConfigurationTests {
    func parse(_ standing: String) throws(SettingsError) -> DaemonConfiguration {
        let table = try SettingsTable.parse("source: {kind: serial, device: x, currencies: [USD]\(standing)}\nstate_dir: /tmp/s\nchain: [{plugin: sanity}]\n",
                                            file: "c.yaml")
        return try DaemonConfiguration.parse(table, pluginDirectory: TestSupport.binDirectory)
    }

    @Test("kept by default; expire and pay_back after a time", arguments: [
        ("", StandingCredit.keep),
        (", standing_credit: {rule: keep}", .keep),
        (", standing_credit: {rule: expire, after_s: 900}", .expire(afterSeconds: 900)),
        (", standing_credit: {rule: pay_back, after_s: 60}", .payBack(afterSeconds: 60)),
    ])
    func rules(standing: String, rule: StandingCredit) throws {
        #expect(try parse(standing).source.standingCredit == rule)
    }

    @Test("bad values are named with what to write instead", arguments: [
        (", standing_credit: {rule: burn, after_s: 60}", "key 'source.standing_credit.rule': must be keep, expire or pay_back, got 'burn'"),
        (", standing_credit: {rule: expire}", "key 'source.standing_credit.after_s': is required for rule expire"),
        (", standing_credit: {rule: pay_back, after_s: 5}", "key 'source.standing_credit.after_s': must be 60 to 604800, got 5"),
        (", standing_credit: {rule: keep, after_s: 600}", "key 'source.standing_credit.after_s': does not apply to rule keep"),
        (", standing_credit: {rule: expire, after_s: 600, to: box}", "source.standing_credit"),
    ])
    func refused(standing: String, message: String) throws {
        do {
            _ = try parse(standing)
            Issue.record("\(standing) was taken")
        } catch {
            #expect("\(error)".contains(message), "\(error)")
        }
    }
}
