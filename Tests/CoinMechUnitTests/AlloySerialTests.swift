import CoinMechModel
import CoinMechSerial
import Testing

@Suite("The alloy axis on the serial line: optional fields, the mech's announcement, faults returned with the field named")
struct AlloySerialTests {
    // Checksums computed independently (Python: XOR of the bytes between $ and *).
    @Test("readings with the alloy axis encode after the clock, which (like the thickness) may be empty", arguments: [
        (SensorReading(deviceSeq: 12, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75, mechMilliseconds: 1_042_337,
                       alloy: AlloySignature(lowIACS: 70.987, highIACS: 6.535, permeability: 1.0)),
         "$CMR,12,24.260,5.670,1.750,1042337,70.987,6.535,1.000*6F\r\n"),
        (SensorReading(deviceSeq: 3, diameterMM: 25.75, weightG: 8.5, alloy: AlloySignature(lowIACS: 9.306, highIACS: 9.017)),
         "$CMR,3,25.750,8.500,,,9.306,9.017*78\r\n"),
    ])
    func encoding(reading: SensorReading, text: String) {
        #expect(SerialFrame.reading(reading).encoded == text)
        var parser = FrameParser()
        var events: [FrameEvent] = []
        parser.feed(Array(text.utf8)) { events.append($0) }
        #expect(events == [.frame(.reading(reading))])
        #expect(parser.errors.sentences == 0)
    }

    @Test("a mech announces its sensor's frequencies: $CMS,ALLOY,<low>/<high>")
    func announcement() {
        let frame = SerialFrame.status(.alloy, detail: "60000/1000000")
        #expect(frame.encoded == "$CMS,ALLOY,60000/1000000*22\r\n")
        var parser = FrameParser()
        var events: [FrameEvent] = []
        parser.feed(frame.bytes) { events.append($0) }
        #expect(events == [.frame(frame)])
    }

    @Test("a figure no metal gives, or one frequency without the other: the reading stands with a fault naming the field, not a malformed sentence",
          arguments: [
              ("CMR,1,24.26,5.67,1.75,100,-3.000,6.5", AlloyFault.Field.conductivityLow, "bad_conductivity_low"),
              ("CMR,2,24.26,5.67,1.75,100,70.1,nan", .conductivityHigh, "bad_conductivity_high"),
              ("CMR,3,24.26,5.67,1.75,100,70.1,150.5", .conductivityHigh, "bad_conductivity_high"),
              ("CMR,4,24.26,5.67,1.75,100,70.1,6.5,-1", .permeability, "bad_permeability"),
              ("CMR,5,24.26,5.67,1.75,100,70.1,6.5,0", .permeability, "bad_permeability"),
              ("CMR,6,24.26,5.67,1.75,100,70.1", .incomplete, "alloy_incomplete"),
              ("CMR,7,24.26,5.67,1.75,100,,6.5", .incomplete, "alloy_incomplete"),
              ("CMR,8,24.26,5.67,1.75,100,,,1.0", .incomplete, "alloy_incomplete"),
              ("CMR,9,24.26,5.67,1.75,100,0x41,6.5", .conductivityLow, "bad_conductivity_low"),
              ("CMR,10,24.26,5.67,1.75,100,inf,6.5", .conductivityLow, "bad_conductivity_low"),
              ("CMR,11,24.26,5.67,1.75,100,70.1,6.5,1e309", .permeability, "bad_permeability"),
          ])
    func faults(body: String, field: AlloyFault.Field, reason: String) throws {
        var parser = FrameParser()
        var events: [FrameEvent] = []
        parser.feed(Array("$\(body)*\(hex(body))\r\n".utf8)) { events.append($0) }
        #expect(parser.errors.sentences == 0)
        guard case .frame(.reading(let reading))? = events.first, events.count == 1 else {
            Issue.record("expected one reading, got \(events)")
            return
        }
        #expect(reading.alloy == nil)
        let fault = try #require(reading.alloyFault)
        #expect(fault.field == field)
        #expect(fault.reason == reason)
        #expect(fault.message.contains(field == .incomplete ? "conductivity" : field.rawValue), "\(fault.message)")
    }

    @Test("a mech that sends no alloy fields is read as before; an empty clock is still malformed when nothing follows it")
    func unchanged() {
        var parser = FrameParser()
        var events: [FrameEvent] = []
        parser.feed(Array("$CMR,12,24.260,5.670,1.750*44\r\n".utf8)) { events.append($0) }
        #expect(events == [.frame(.reading(SensorReading(deviceSeq: 12, diameterMM: 24.26, weightG: 5.67, thicknessMM: 1.75)))])
        let body = "CMR,8,24.26,5.67,1.75,"
        events = []
        parser.feed(Array("$\(body)*\(hex(body))\r\n".utf8)) { events.append($0) }
        #expect(events == [.error(.malformed(sentence: "$\(body)*\(hex(body))", reason: "bad mech clock ''"))])
    }

    @Test("the host's checks: none is no axis; the limits are those of metals")
    func checks() {
        #expect((try? AlloySignature.checked(lowIACS: nil, highIACS: nil, permeability: nil).get()) == .some(nil))
        #expect((try? AlloySignature.checked(lowIACS: 0, highIACS: 150, permeability: 100_000).get()) != nil)
        #expect((try? AlloySignature.checked(lowIACS: 0, highIACS: 150.001, permeability: nil).get()) == nil)
        #expect((try? AlloySignature.checked(lowIACS: 5, highIACS: 5, permeability: 100_000.5).get()) == nil)
    }

    private func hex(_ body: String) -> String {
        let sum = body.utf8.reduce(UInt8(0), ^)
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(sum >> 4)], digits[Int(sum & 0xF)]])
    }
}
