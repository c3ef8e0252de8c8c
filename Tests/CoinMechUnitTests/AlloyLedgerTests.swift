import CoinMechCore
import CoinMechFleet
@testable import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
@testable import CoinMechTestSupport
import Foundation
import Testing

/// The alloy axis on the money path: the core returns figures no metal gives without asking the
/// chain, and counts them; the ledger, the decision journal and the socket's events carry the
/// axis where it was measured.
@Suite("The alloy axis through the core, the ledger, the journal and the events")
struct AlloyLedgerTests {
    static let quarterAlloy = AlloySignature(lowIACS: 70.987, highIACS: 6.535, permeability: 1.0)

    static func reading(_ seq: UInt64, sentAt: Instant, alloy: AlloySignature? = quarterAlloy, fault: AlloyFault? = nil) -> MechEvent {
        .reading(MechReading(deviceSeq: seq, measurement: Measurement(diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75, channel: nil, alloy: alloy),
                             sentAt: sentAt, alloyFault: fault))
    }

    @Test("figures no metal gives: returned at once with the field's reason, link source, counted, the chain never asked")
    func faultReturned() {
        let asked = Counter()
        var rig = CoreRig(decider: { candidate in
            asked.count += 1
            return CoreRig.quarters(candidate)
        })
        rig.feed(.mech([.connected(path: "/dev/mech"), .session(boot: 1)]))
        let fault = AlloyFault(.conductivityLow, "conductivity_low -3.0 % IACS is not a measurement (0 to 150)")
        let outputs = rig.feed(.mech([Self.reading(1, sentAt: rig.now, alloy: nil, fault: fault)]))
        #expect(outputs.answers.map(\.1) == [false])
        let decision = rig.ledger.decisions.values.first
        #expect(decision?.record.verdict == .reject(reason: "bad_conductivity_low", message: fault.message))
        #expect(decision?.record.link == "source")
        #expect(rig.core.snapshot.counters.badAlloy == 1)
        #expect(asked.count == 0)
        // A reading with good figures walks the chain, and its decision carries them.
        rig.feed(.mech([Self.reading(2, sentAt: rig.now)]))
        #expect(asked.count == 1)
        #expect(rig.ledger.decisions.values.first { $0.key.deviceSeq == 2 }?.record.alloy == Self.quarterAlloy)
        #expect(rig.core.snapshot.counters.badAlloy == 1)
    }

    @Test("the ledger keeps the axis with the decision and its settlement; a restart's recent decisions have it (a repeat is still a repeat)")
    func ledger() throws {
        let directory = TestSupport.temporaryDirectory("alloy-ledger")
        let ledger = try Ledger(directory: directory)
        var record = DecisionRecord(source: "serial", epoch: 1, deviceSeq: 7, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75, channel: nil,
                                    verdict: .accept(currency: "USD", code: "quarter", valueMinor: 25), link: "usd", chainGeneration: 1)
        record.alloy = Self.quarterAlloy
        let plain = DecisionRecord(source: "serial", epoch: 1, deviceSeq: 8, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75, channel: nil,
                                   verdict: .reject(reason: "unrecognized", message: "no link"), link: "unrecognized", chainGeneration: 1)
        let appended = try ledger.append([.decision(record, credit: .onConfirmation), .decision(plain, credit: .onConfirmation)])
        #expect(appended.events.first?.alloy == Self.quarterAlloy)
        let decisionSeq = try #require(appended.events.first?.seq)
        _ = try ledger.append([.resolve(decisionSeq: decisionSeq, .credited, message: "stored")])
        let events = try Ledger(directory: directory).events(since: 0, limit: 100)
        #expect(events.filter { $0.deviceSeq == 7 }.count == 2)
        #expect(events.filter { $0.deviceSeq == 7 }.allSatisfy { $0.alloy == Self.quarterAlloy })
        #expect(events.first { $0.deviceSeq == 8 }?.alloy == nil)
        let recent = try ledger.sourceState("serial").recent
        #expect(recent.first { $0.deviceSeq == 7 }?.alloy == Self.quarterAlloy)
        #expect(recent.first { $0.deviceSeq == 8 }?.alloy == nil)
    }

    @Test("the decision journal's line carries the axis exactly; one with a figure that is not finite is not journalled")
    func journal() throws {
        var record = DecisionRecord(source: "serial", epoch: 1, deviceSeq: 7, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75, channel: nil,
                                    verdict: .accept(currency: "USD", code: "quarter", valueMinor: 25), link: "usd", chainGeneration: 1)
        record.alloy = AlloySignature(lowIACS: 0.1 + 0.2, highIACS: 6.535, permeability: nil)
        let line = try #require(DecisionJournalLine.encode(record, number: 1, batch: 1))
        #expect(DecisionJournalLine.decode(line.dropLast()) == .record(record, number: 1, batch: 1))
        record.alloy?.permeability = .nan
        #expect(DecisionJournalLine.encode(record, number: 1, batch: 1) == nil)
    }

    @Test("the socket's events carry the axis under the keys PROTOCOL.md names, and leave them out where it was not measured")
    func events() {
        var event = LedgerEvent(seq: 61, time: 1, kind: "decision", diameterMM: 24.31)
        #expect(event.json.object?["conductivity_low_iacs"] == nil)
        event.alloy = AlloySignature(lowIACS: 28.104, highIACS: 28.05, permeability: 1.003)
        let object = event.json.object
        #expect(object?["conductivity_low_iacs"] == .double(28.104))
        #expect(object?["conductivity_high_iacs"] == .double(28.05))
        #expect(object?["permeability"] == .double(1.003))
    }
}

/// A count a closure can bump.
private final class Counter: @unchecked Sendable {
    var count = 0
}


@Suite("The fleet keeps a decision's alloy axis as the cabinet sent it")
struct AlloyFleetTests {
    @Test("a decision event with the alloy axis is read whole: PostgreSQL takes the event out of the message as it came")
    func fleetEvent() throws {
        let prefix = "coinmech/v1/"
        let message = try FleetMessage.read(topic: prefix + "paris-nord/c-0042/event", payload: Array(#"""
            {"v":1,"cabinet":"c-0042","site":"paris-nord","seq":61,"published":1795290000.512,
             "event":{"seq":61,"time":1795290000.431,"kind":"decision","source":"serial","epoch":1,"device_seq":13,"diameter_mm":24.31,
                      "weight_g":5.68,"thickness_mm":1.76,"conductivity_low_iacs":28.104,"conductivity_high_iacs":28.05,"permeability":1.003,
                      "verdict":"reject","reason":"wrong_alloy","link":"usd","chain_generation":3}}
            """#.utf8), prefix: prefix)
        guard case .event(let event)? = message else { Issue.record("not an event: \(String(describing: message))"); return }
        #expect(event.kind == "decision")
        #expect(event.json.contains(#""conductivity_low_iacs":28.104"#) && event.json.contains(#""conductivity_high_iacs":28.05"#)
            && event.json.contains(#""permeability":1.003"#))
    }
}
