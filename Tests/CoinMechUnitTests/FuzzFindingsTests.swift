import CoinMechConfiguration
import CoinMechDaemon
import CoinMechModel
import CoinMechProtocol
import CoinMechSerial
import CoinMechSettings
import Testing

/// What the long fuzz runs found (each also under `Fuzz/regressions/`), as plain checks with
/// the message a person sees.
@Suite("Fuzz findings: base-60 numbers, GPIO line offsets, whole numbers in JSON, permeabilities")
struct FuzzFindingsTests {
    // A permeability of 0.0001 was taken as a measurement, then sent on with the line's three
    // decimals as 0.000, which reads back as no measurement: the reading changed on its way.
    @Test("a permeability below what the line's three decimals carry is a fault naming the field, as 0 is")
    func permeabilityBelowThreeDecimals() throws {
        for (figure, measured) in [("0.0001", false), ("0.0009", false), ("0.001", true), ("0.0014", true)] {
            let body = "CMR,12,24.260,5.670,1.750,1042337,70.987,6.535,\(figure)"
            let sum = body.utf8.reduce(UInt8(0), ^)
            let digits = Array("0123456789ABCDEF")
            var parser = FrameParser()
            var events: [FrameEvent] = []
            parser.feed(Array("$\(body)*\(String([digits[Int(sum >> 4)], digits[Int(sum & 0xF)]]))\r\n".utf8)) { events.append($0) }
            guard events.count == 1, case .frame(.reading(let reading)) = events[0] else {
                Issue.record("\(figure): \(events)")
                continue
            }
            if measured {
                #expect(reading.alloy?.permeability == Double(figure), "\(figure)")
                #expect(reading.alloyFault == nil, "\(figure)")
            } else {
                #expect(reading.alloy == nil, "\(figure)")
                #expect(reading.alloyFault?.description == "permeability \(Double(figure)!) is not a measurement (0.001 to 100000)", "\(figure)")
            }
        }
    }

    // Yams reads YAML 1.1's base-60 integers (`1:30`) with unchecked arithmetic: a long one
    // stopped coinsim (scenario) and coinmechd (configuration) instead of being refused.
    @Test("a base-60 number is refused as a whole number, not a crash", arguments: ["66666666666666222:+22262:2:+2:+226", "1:30"])
    func baseSixty(text: String) throws {
        let table = try SettingsTable.parse("coins: \(text)\n", file: "s.yaml")
        #expect(throws: SettingsError.self) { try table.int("coins") }
        do {
            _ = try table.int("coins")
        } catch {
            #expect(error.description == "s.yaml:1: key 'coins': must be a whole number, got '\(text)'")
        }
    }

    // A GPIO line offset beyond UInt32 stopped coinmechd at `UInt32(line)`.
    @Test("a GPIO line offset out of range is refused at its line")
    func lineOffset() throws {
        let text = """
            source:
              kind: gpio
              chip: gpiochip0
              pulse: {line: 17}
              inhibit: {line: 2599999999999991}
            chain: [{plugin: channel-map, config: {currency: USD, channels: {1: 25}}}]

            """
        let table = try SettingsTable.parse(text, file: "c.yaml")
        #expect(throws: SettingsError.self) { try DaemonConfiguration.parse(table, pluginDirectory: "/nonexistent") }
        do {
            _ = try DaemonConfiguration.parse(table, pluginDirectory: "/nonexistent")
        } catch {
            #expect(error.description == "c.yaml:5: key 'source.inhibit.line': must be 0 to 65535, got 2599999999999991")
        }
    }

    // A negative or huge time in milliseconds stopped coinmechd converting it to nanoseconds.
    @Test("GPIO times out of range are refused at their line", arguments: [
        ("gates: {a: 22, b: 23, distance_mm: 50, min_occlusion_ms: -.5}", "source.gates.min_occlusion_ms': must be 0 to 1000, got -0.5"),
        ("pulse: {line: 17, gap_ms: 1e300}", "source.pulse.gap_ms': must be 1 to 10000, got 1e+300"),
        ("pulse: {line: 17}\n  accept_gate: {line: 24, pulse_ms: -1}", "source.accept_gate.pulse_ms': must be 1 to 10000, got -1"),
    ])
    func gpioTimes(source: String, message: String) throws {
        let text = "source:\n  kind: gpio\n  chip: gpiochip0\n  \(source)\nchain: [{plugin: channel-map}]\n"
        let table = try SettingsTable.parse(text, file: "c.yaml")
        #expect(throws: SettingsError.self) { try DaemonConfiguration.parse(table, pluginDirectory: "/nonexistent") }
        do {
            _ = try DaemonConfiguration.parse(table, pluginDirectory: "/nonexistent")
        } catch {
            #expect(error.description.hasSuffix(message), "\(error.description)")
        }
    }

    // `{"id": 922337203685477233.2}` was a `.double`, written as 9.223372036854772e+17, and
    // read back as an `.int`: the reply did not carry the request's id as itself.
    @Test("a whole number read with a fraction or an exponent is an int, and reads back as itself", arguments: [
        ("922337203685477233.2", nil), ("9.2e17", JSON.int(920_000_000_000_000_000)), ("2.0", .int(2)), ("-0.0", .int(0)),
        ("1e300", .double(1e300)), ("0.5", .double(0.5)),
    ] as [(String, JSON?)])
    func wholeNumbers(text: String, expected: JSON?) throws {
        let value = try #require(JSON.parse("{\"id\": \(text)}")?["id"])
        #expect(JSON.parse(value.description) == value, "\(text) → \(value.description)")
        if let expected { #expect(value == expected) }
    }
}
