@testable import CoinMechFleet
import Testing

/// The EVA-DTS (DEX/UCS) export as pure functions, against a worked example written out by hand
/// from EVA-DTS 6.2's field definitions (docs/FLEET.md, "DEX export"). The CRC in it was
/// computed apart from the code under test, by this Python (CRC-16/ARC, bit by bit):
///
///     def crc16_arc(data):
///         crc = 0
///         for b in data:
///             crc ^= b
///             for _ in range(8):
///                 crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
///         return crc
///     lines = ["ST*001*0001", "ID1*c-0042***paris-nord", "ID4*2**EUR", "CA1*SN4471*SR5i*0103",
///              "CA3*1250*850*400**48200*30200*18000", "CA4*300**5150", "EA2*EAG*2*7**0",
///              "EA3**20261108*000000**20261101*063015"]
///     "%04X" % crc16_arc("".join(l + "\r\n" for l in lines).encode())   # '9ECF'
@Suite("DEX export: the EVA-DTS envelope, its CRC and segment count, and the audit's fields")
struct DEXAuditTests {
    /// 2026-11-01 06:30:15 UTC and 2026-11-08 00:00:00 UTC (`calendar.timegm`).
    static let from = 1_793_514_615.0
    static let to = 1_794_096_000.0

    /// A week of a cabinet with an MDB changer: 12.50 EUR in (8.50 to the cash box, 4.00 to its
    /// tubes), 3.00 paid out, two jams, one comms loss before the week and none in it.
    static let week = DEXAudit(
        cabinet: "c-0042", site: "paris-nord", currency: "EUR", from: from, to: to,
        coinMech: .init(serialNumber: "SN4471", model: "SR5i", softwareRevision: "0103"),
        cashIn: .init(1250, 48200), toCashBox: .init(850, 30200), toTubes: .init(400, 18000),
        dispensedSinceReset: 300, dispensedSinceInitialisation: 5150,
        events: [.init(code: "EAG", count: .init(2, 7), active: false), .init(code: "EAR", count: .init(0, 3), active: false)])

    @Test("the worked example, byte for byte: DXS, ST, ID1, ID4, CA1, CA3, CA4, EA2 (EAR left out: none in the period, not active), EA3, G85, SE, DXE")
    func workedExample() throws {
        let expected = [
            "DXS*CMF0000001*VA*V0/6*1",
            "ST*001*0001",
            "ID1*c-0042***paris-nord",
            "ID4*2**EUR",
            "CA1*SN4471*SR5i*0103",
            "CA3*1250*850*400**48200*30200*18000",
            "CA4*300**5150",
            "EA2*EAG*2*7**0",
            "EA3**20261108*000000**20261101*063015",
            "G85*9ECF",
            "SE*10*0001",
            "DXE*1*1",
        ].map { $0 + "\r\n" }.joined()
        #expect(try Self.week.file() == expected)
        #expect(Self.week.fileName == "c-0042_20261101T063015Z_20261108T000000Z.dex")
    }

    @Test("CRC-16/ARC: its check value, and the G85 of a DEX file published with its generator's own CRC")
    func crc() {
        #expect(DEXCRC16.checksum("123456789".utf8) == 0xBB3D)
        #expect(DEXCRC16.hex(0x0A0B) == "0A0B")
        // The transaction set of the file an open-source vending modem firmware's EVA-DTS
        // generator is expected to write (its Config3GeneratorTest, sender EPHOR00001; the file
        // ends G85*4DED, SE*40): ST to the CR LF before G85.
        let set = ["ST*001*0001", "IC1******0", "IC4*1*1643**1*50000*0*0*2*1*0*1*0*0*0*0*0*1", "AC2**internet*gdata*gdata*1*0*0*1*",
                   "FC1*0*1**0**0", "FC2**0**", "FC3*", "FC4*", "FC5*"]
            + (1...5).flatMap { n -> [String] in
                let price = n == 2 || n == 5 ? "270" : "250"
                let stock = n <= 3 ? "3" : n == 4 ? "2" : "1"
                return ["PC1*0\(n)*\(price)*0", "PC9*0\(n)*\(n - 1)*\(stock)*", "PC7*0\(n)*CA*0*\(price)", "PC7*0\(n)*DA*1*100"]
            }
            + ["MC5*0*INTERNET*1", "MC5*1*EXT1*0", "MC5*2*EXT2*0", "MC5*3*USB1*0", "MC5*4*QRTYPE*0", "MC5*5*ETH1MAC*2089846A9601",
               "MC5*6*ETH1ADDR*192.168.1.200", "MC5*7*ETH1MASK*255.255.255.0", "MC5*8*ETH1GW*192.168.1.1"]
        #expect(set.count + 2 == 40)
        #expect(DEXCRC16.hex(DEXCRC16.checksum(set.map { $0 + "\r\n" }.joined().utf8)) == "4DED")
    }

    @Test("the envelope counts ST to SE and checks ST to the line before G85, whatever the data")
    func envelope() {
        let file = DEXWriter(sender: "XYZ1234567").file([DEXSegment("ID1", ["ABC98765", nil, nil, nil, nil, "12234"])])
        let lines = file.components(separatedBy: "\r\n")
        #expect(lines == ["DXS*XYZ1234567*VA*V0/6*1", "ST*001*0001", "ID1*ABC98765*****12234", "G85*\(DEXCRC16.hex(DEXCRC16.checksum("ST*001*0001\r\nID1*ABC98765*****12234\r\n".utf8)))",
                          "SE*4*0001", "DXE*1*1", ""])
    }

    @Test("an element not available is only its *, and empty elements at the end are left off")
    func emptyElements() {
        #expect(DEXSegment("ID1", ["VMC123", nil, "5678", nil, nil, nil]).text == "ID1*VMC123**5678")
        #expect(DEXSegment("CA4", [nil, nil, "250", "0"]).text == "CA4***250*0")
        #expect(DEXSegment("EA3", [nil, nil]).text == "EA3")
    }

    @Test("alphanumeric elements: *, ^, control characters and bytes above 127 are sent as ^XX^")
    func escaping() {
        #expect(DEXSegment.alphanumeric("A*B^C\r\n") == "A^2A^B^5E^C^0D^^0A^")
        #expect(DEXSegment.alphanumeric("é") == "^C3^^A9^")
        #expect(DEXSegment.alphanumeric("paris-nord 2") == "paris-nord 2")
    }

    @Test("what the fleet cannot say is left out: no CA4 without payouts, CA401 empty after a manual dispense, no ID4 without money, a mech without a serial number no CA1, an overlong model or a non-numeric revision empty")
    func leftOut() throws {
        var audit = Self.week
        audit.dispensedSinceReset = nil
        audit.dispensedSinceInitialisation = nil
        audit.currency = nil
        audit.coinMech = .init(serialNumber: nil, model: "SR5i", softwareRevision: "1")
        var texts = try audit.segments().map(\.text)
        #expect(!texts.contains { $0.hasPrefix("CA4") || $0.hasPrefix("ID4") || $0.hasPrefix("CA1") })
        audit.dispensedSinceReset = nil
        audit.dispensedSinceInitialisation = 5150
        audit.coinMech = .init(serialNumber: "SN*1", model: String(repeating: "m", count: 21), softwareRevision: "1.2")
        texts = try audit.segments().map(\.text)
        #expect(texts.contains("CA4***5150"))
        #expect(texts.contains("CA1*SN^2A^1"))
    }

    @Test("events: sent when they occurred in the period or are active at its end (2.8.1), active as 1")
    func events() throws {
        var audit = Self.week
        audit.events = [.init(code: "EAG", count: .init(0, 7), active: true), .init(code: "EAR", count: .init(0, 3), active: false),
                        .init(code: "EAR", count: .init(1, 4), active: true)]
        let texts = try audit.segments().map(\.text).filter { $0.hasPrefix("EA2") }
        #expect(texts == ["EA2*EAG*0*7**1", "EA2*EAR*1*4**1"])
    }

    @Test("refused with a reason: a cabinet id past ID101's 20 characters, a sum past 8 digits, a count past 6, a bad currency")
    func refusals() {
        var audit = Self.week
        audit.cabinet = String(repeating: "c", count: 21)
        #expect(throws: DEXError.self) { try audit.file() }
        audit = Self.week
        audit.cashIn = .init(1250, 100_000_000)
        #expect { try audit.file() } throws: { ($0 as? DEXError)?.description.contains("CA305") == true }
        audit = Self.week
        audit.events = [.init(code: "EAG", count: .init(1, 1_000_000), active: false)]
        #expect { try audit.file() } throws: { ($0 as? DEXError)?.description.contains("EA203") == true }
        audit = Self.week
        audit.currency = "euro"
        #expect(throws: DEXError.self) { try audit.file() }
    }

    @Test("the period: dates at midnight UTC, times with their zone; an empty or reversed period and anything else refused")
    func period() throws {
        let week = try ExportPeriod(from: "2026-11-01T06:30:15Z", to: "2026-11-08")
        #expect(week.from == Self.from && week.to == Self.to)
        #expect(try ExportPeriod(from: "2026-11-01T07:30:15+01:00", to: "2026-11-08").from == Self.from)
        #expect(try ExportPeriod(from: "2028-02-29", to: "2028-03-01").to - 86400 == ExportPeriod(from: "2028-02-28", to: "2028-02-29").to)
        for (a, b) in [("2026-11-08", "2026-11-08"), ("2026-11-09", "2026-11-08")] {
            #expect("\(a) … \(b)") { try ExportPeriod(from: a, to: b) } throws: { ($0 as? DEXError)?.description.contains("the period is empty") == true }
        }
        // Impossible dates and times are not rolled over into others.
        for (a, b) in [("yesterday", "2026-11-08"), ("2026-11-01", "2026-13-01"), ("", "2026-11-08"), ("1793514615", "2026-11-08"),
                       ("2026-11-01", "2026-02-30"), ("2026-11-01", "2026-02-29"), ("2026-11-01T24:30:00Z", "2026-11-08"), ("2026-11-01T06:60:00Z", "2026-11-08")] {
            #expect("\(a) … \(b)") { try ExportPeriod(from: a, to: b) } throws: { ($0 as? DEXError)?.description.contains("is not a date") == true }
        }
    }

    @Test("ID401: the currency's minor unit")
    func decimalPlaces() {
        #expect(DEXAudit.decimalPlaces("EUR") == 2 && DEXAudit.decimalPlaces("JPY") == 0 && DEXAudit.decimalPlaces("KWD") == 3)
    }
}
