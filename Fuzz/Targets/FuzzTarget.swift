import CoinMechCCTalk
import CoinMechConfiguration
import CoinMechLedger
import CoinMechMDB
import CoinMechModel
import CoinMechProtocol
import CoinMechSerial
import CoinMechSettings
import CoinSimCore
import Foundation

/// The parsers that read what another program or a person wrote, as fuzz targets. Each takes
/// any bytes, must not crash, hang or leak on them, and checks what its parser promises: a
/// `precondition` that fails is a finding, as a crash is. `coinmech-fuzz` runs them under
/// libFuzzer (`make fuzz`); the tests replay the committed corpus through them.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `FrameParser`: the bytes a mech sends on the serial line.
    case frame
    /// `ClientRequest.parse` and the reply built from it: one request line on the socket.
    case request
    /// `SettingsTable` + `DaemonConfiguration.parse`: coinmechd's configuration file.
    case config
    /// `SettingsTable` + `Scenario.parse`, then a few insertions drawn from the scenario.
    case scenario
    /// `MDBAdapterLineParser`, then every changer reply parser on each line's data: what an
    /// MDB adapter (and the changer behind it) sends.
    case mdb
    /// `CCTalkParser`, then every request's reply reader on each frame: what a ccTalk acceptor
    /// or hopper sends.
    case cctalk
    /// `DecisionJournal`'s reader: what a crash, a power cut or a damaged disk can leave in
    /// `decisions.journal`, read at every start before anything else.
    case journal

    /// Runs one input; returns whether it was valid (a sentence decoded, a request or a
    /// configuration or a scenario accepted), so the tests can check the seeds still are.
    @discardableResult
    public func run(_ bytes: UnsafeRawBufferPointer) -> Bool {
        switch self {
        case .frame: Self.frame(bytes)
        case .request: Self.request(bytes)
        case .config: Self.config(bytes)
        case .scenario: Self.scenario(bytes)
        case .mdb: Self.mdb(bytes)
        case .cctalk: Self.cctalk(bytes)
        case .journal: Self.journal(bytes)
        }
    }

    @discardableResult
    public func run(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { run($0) } }

    // MARK: Serial frames

    /// The stream parsed whole and in pieces gives the same sentences and errors (a `read`
    /// may return any split); the counts add up; every sentence re-encodes to one that parses
    /// back to itself (when it fits in a sentence); a reading's alloy figures are measurements
    /// or a fault naming the field.
    static func frame(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var whole = FrameParser()
        var wholeEvents: [FrameEvent] = []
        whole.feed(bytes) { wholeEvents.append($0) }

        var split = FrameParser()
        var splitEvents: [FrameEvent] = []
        inReads(bytes) { chunk in split.feed(chunk) { splitEvents.append($0) } }

        precondition(whole.errors == split.errors, "error counts depend on how the stream is split")
        precondition(coalescingGarbage(wholeEvents) == coalescingGarbage(splitEvents), "events depend on how the stream is split")

        var counted = FrameErrorCounts()
        var frames = 0
        for event in wholeEvents {
            switch event {
            case .error(let error):
                counted.count(error)
                if case .overlong(let count) = error { precondition(count >= SerialFrame.maximumLength, "overlong below the limit: \(count)") }
            case .frame(let frame):
                frames += 1
                if case .reading(let reading) = frame {
                    // The alloy axis: a figure is a measurement or the reading carries a fault
                    // naming its field, never both, and nothing no metal gives gets through.
                    precondition(reading.alloy == nil || reading.alloyFault == nil, "a reading with both an alloy axis and a fault")
                    if let alloy = reading.alloy {
                        precondition(AlloySignature.iacsRange.contains(alloy.lowIACS) && AlloySignature.iacsRange.contains(alloy.highIACS),
                                     "conductivity beyond every metal got through: \(alloy)")
                        precondition(alloy.permeability.map { $0 >= AlloySignature.permeabilityMinimum && $0 <= AlloySignature.permeabilityLimit } ?? true,
                                     "permeability beyond every material got through: \(alloy)")
                    }
                }
                // CR is optional on input and a reading's figures are re-printed with three
                // decimals, so the sentence may grow; one that still fits must read back.
                let encoded = frame.bytes
                guard encoded.count <= SerialFrame.maximumLength else { continue }
                var again = FrameParser()
                var parsed: [FrameEvent] = []
                again.feed(encoded) { parsed.append($0) }
                guard parsed.count == 1, case .frame(let back) = parsed[0] else { preconditionFailure("\(frame.encoded) does not parse back") }
                precondition(back.encoded == frame.encoded, "\(frame.encoded) parses back as \(back.encoded)")
            }
        }
        precondition(counted == whole.errors, "reported errors and counts differ")
        return frames > 0
    }

    /// Hands `bytes` over as `read` might: chunks of 1 to 16 bytes, sizes drawn from the input
    /// itself (so libFuzzer's mutations move the boundaries too).
    static func inReads(_ bytes: UnsafeRawBufferPointer, _ feed: (UnsafeRawBufferPointer) -> Void) {
        var state = bytes.reduce(UInt64(bytes.count)) { ($0 &* 0x100_0000_01B3) ^ UInt64($1) }
        var start = 0
        while start < bytes.count {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let end = min(bytes.count, start + 1 + Int(state >> 60))
            feed(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
            start = end
        }
    }

    /// Garbage is reported per `feed` call, so runs of it are merged before comparing.
    static func coalescingGarbage(_ events: [FrameEvent]) -> [FrameEvent] {
        var merged: [FrameEvent] = []
        for event in events {
            if case .error(.garbage(let count)) = event, case .error(.garbage(let before))? = merged.last {
                merged[merged.count - 1] = .error(.garbage(byteCount: before + count))
            } else {
                merged.append(event)
            }
        }
        return merged
    }

    // MARK: MDB adapter lines

    /// The stream parsed whole and in pieces gives the same replies and errors; no line longer
    /// than the limit gets through; each reply's data goes through every changer reply parser,
    /// which accept it or refuse it with a typed error, and never read past its end (a POLL's
    /// events account for its bytes exactly).
    static func mdb(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var whole = MDBAdapterLineParser()
        var wholeEvents: [MDBAdapterLineParser.Event] = []
        whole.feed(bytes) { wholeEvents.append($0) }

        var split = MDBAdapterLineParser()
        var splitEvents: [MDBAdapterLineParser.Event] = []
        inReads(bytes) { chunk in split.feed(chunk) { splitEvents.append($0) } }
        precondition(wholeEvents == splitEvents, "MDB adapter events depend on how the stream is split")

        var valid = false
        for event in wholeEvents {
            switch event {
            case .error(.overlongLine(let count)):
                precondition(count > MDBAdapterLineParser.maximumLineLength, "overlong below the limit: \(count)")
            case .error:
                break
            case .reply(.peripheral(.data(let data))):
                precondition(!data.isEmpty, "peripheral data with no byte")
                valid = true
                let poll = MDBPollReply(data: data)
                let width = poll.events.reduce(0) { total, event in
                    switch event {
                    case .deposited, .dispensedManually: total + 2
                    case .slugs, .status, .unknownStatus: total + 1
                    }
                }
                let truncated = if case .truncatedEvent = poll.problem { true } else { false }
                precondition(width == data.count - (truncated ? 1 : 0), "POLL events account for \(width) of \(data.count) bytes")
                precondition((data.count > MDBPollReply.maximumLength || truncated) == (poll.problem != nil), "a POLL reply's fault and its bytes disagree")
                if let setup = try? MDBChangerSetup(reply: data) {
                    precondition(setup.credits.count == data.count - MDBChangerSetup.fixedLength, "SETUP credits miscounted")
                    for type in 0..<16 { _ = setup.valueMinor(ofType: type) }
                }
                if let tubes = try? MDBTubeStatus(reply: data) { precondition(tubes.counts.count == 16, "TUBE STATUS without 16 counts") }
                _ = try? MDBChangerIdentity(reply: data)
                _ = try? MDBPayoutStatus(reply: data)
            case .reply:
                valid = true
            }
        }
        return valid
    }

    // MARK: ccTalk lines

    /// Every request a host sends, for reading each frame as its reply.
    static let ccTalkRequests: [CCTalkRequest] = [
        .simplePoll, .equipmentCategory, .manufacturer, .productCode, .serialNumber, .softwareRevision, .commsRevision,
        .coinID(position: 1), .setInhibits(enabled: CoinPositionMask(bytes: 0xFF, 0xFF)), .readInhibits, .setMasterInhibit(accepting: true),
        .readMasterInhibit, .selfCheck, .optoStates, .reset, .pollingPriority, .readBufferedCredit, .enableHopper(true), .testHopper,
        .hopperStatus, .dispenseHopperCoins(count: 1, serialNumber: 0x123456), .hopperCoin, .emergencyStop,
    ]

    /// The first byte picks the checksum; the rest is the line. Parsed whole and split where a
    /// `read` might, the frames and errors are the same; every frame encodes back to bytes that
    /// parse as itself; read as the reply to every request, it is an answer or a typed error.
    static func cctalk(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let first = bytes.first else { return false }
        let checksum: CCTalkChecksum = first & 1 == 0 ? .simple : .crc16
        let line = UnsafeRawBufferPointer(rebasing: bytes[1...])
        let destinations: Set<UInt8> = [CCTalkFrame.hostAddress, CCTalkFrame.coinAcceptorAddress, CCTalkFrame.broadcastAddress]
        var whole = CCTalkParser(checksum: checksum, destinations: destinations)
        var wholeEvents: [CCTalkParser.Event] = []
        whole.feed(line, at: 0) { wholeEvents.append($0) }
        var split = CCTalkParser(checksum: checksum, destinations: destinations)
        var splitEvents: [CCTalkParser.Event] = []
        inReads(line) { chunk in split.feed(chunk, at: 0) { splitEvents.append($0) } }
        precondition(wholeEvents.filter(\.isFrame) == splitEvents.filter(\.isFrame), "ccTalk frames depend on how the stream is split")
        var frames = 0
        for case .frame(let frame) in wholeEvents {
            frames += 1
            precondition(frame.data.count <= CCTalkFrame.maximumData, "a frame longer than ccTalk allows")
            var again = CCTalkParser(checksum: checksum, destinations: destinations)
            var parsed: [CCTalkFrame] = []
            again.feed(frame.encoded(checksum), at: 0) { if case .frame(let back) = $0 { parsed.append(back) } }
            precondition(parsed.count == 1 && parsed[0].header == frame.header && parsed[0].data == frame.data, "\(frame) does not parse back")
            for request in ccTalkRequests { _ = try? request.answer(frame) }
        }
        return frames > 0
    }

    // MARK: The decision journal

    /// Any bytes as a journal file: read without crashing, or refused as damage that is not a
    /// crash's (a typed error). What it reads back is lines numbered on from one; each record
    /// written again as a line reads back as itself.
    static func journal(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let read: (records: [DecisionRecord], tornBytes: Int)
        do throws(LedgerError) {
            read = try DecisionJournal.read(Array(bytes))
        } catch {
            return false
        }
        precondition(read.tornBytes <= bytes.count, "more torn bytes than the file has")
        for (index, record) in read.records.enumerated() {
            guard let line = DecisionJournal.line(record, number: UInt64(index + 1), batch: 1) else { continue }
            let back = try? DecisionJournal.read(line)
            precondition(back?.records == [record] && back?.tornBytes == 0, "a journalled record does not read back as itself: \(record)")
        }
        return !read.records.isEmpty
    }

    // MARK: Socket requests

    /// What `ClientHandler` does with a line before it touches the ledger: the reply it builds
    /// (an error, or one echoing the id) is JSON that reads back as itself, and arguments are in
    /// range.
    static func request(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // As LineFrameDecoder hands it over: up to the newline, UTF-8 with replacement, no CR.
        let line = bytes.firstIndex(of: UInt8(ascii: "\n")).map { UnsafeRawBufferPointer(rebasing: bytes[..<$0]) } ?? bytes
        guard line.count <= ClientProtocol.maximumRequestLength else { return false }
        var text = String(decoding: line, as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { return false }
        // The one-pass reader answers only where it reads as the decoder does.
        if let fast = JSONFastReader.read(text) {
            precondition(fast == JSON.decoded(text), "JSONFastReader read \(text) otherwise than the decoder")
        }

        let reply: JSON
        var valid = false
        switch ClientRequest.parse(text) {
        case .failure(let failure):
            reply = ClientProtocol.error(id: failure.id, failure.code, failure.message)
        case .success(let request):
            switch request.command {
            case .failure(let failure):
                precondition(failure.id == request.id, "an argument error lost the request's id")
                reply = ClientProtocol.error(id: failure.id, failure.code, failure.message)
            case .success(let command):
                switch command {
                case .events(let since, let limit):
                    precondition(since >= 0 && (1...1000).contains(limit), "events arguments out of range")
                case .subscribe(let since, _):
                    precondition((since ?? 0) >= 0, "subscribe since out of range")
                default: break
                }
                valid = true
                reply = ClientProtocol.reply(id: request.id, result: ["cmd": .string(request.name)])
            }
        }
        let written = reply.description
        precondition(!written.contains("\n"), "a reply line holds a newline")
        precondition(JSON.parse(written) == reply, "the reply does not read back as itself: \(written)")
        return valid
    }

    // MARK: Configuration and scenarios

    /// A plugin directory holding an (empty) file for every shipped plugin, so that chains
    /// naming them pass the loader's lookup. Made once per process.
    static let pluginDirectory: String = {
        let directory = NSTemporaryDirectory() + "coinmech-fuzz-plugins-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in ["coin", "coin-table", "sanity", "repeat-guard", "weight-floor", "channel-map"] {
            _ = FileManager.default.createFile(atPath: "\(directory)/lib\(name).so", contents: Data())
        }
        return directory
    }()

    /// Settings files are read as UTF-8 (anything else is refused before parsing).
    static func settingsText(_ bytes: UnsafeRawBufferPointer) -> String? {
        String(validating: bytes, as: UTF8.self)
    }

    /// Every error names a line the file has (libyaml counts CR, LF, NEL, LS and PS as breaks;
    /// counting each gives an upper bound).
    static func checkErrorLine(_ error: SettingsError, _ text: String) {
        guard let line = error.line else { return }
        let breaks = text.unicodeScalars.reduce(0) { count, scalar in
            ["\n", "\r", "\u{85}", "\u{2028}", "\u{2029}"].contains(scalar) ? count + 1 : count
        }
        precondition(line >= 0 && line <= breaks + 1, "error names line \(line) of a file of \(breaks + 1) lines: \(error)")
        precondition(!error.message.isEmpty, "an error without a message")
    }

    static func config(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let text = settingsText(bytes) else { return false }
        let configuration: DaemonConfiguration
        do throws(SettingsError) {
            configuration = try DaemonConfiguration.parse(try SettingsTable.parse(text, file: "/fuzz/coinmechd.yaml"), pluginDirectory: pluginDirectory)
        } catch {
            checkErrorLine(error, text)
            return false
        }
        precondition(!configuration.chain.isEmpty, "a configuration without a chain")
        precondition(Set(configuration.chain.map(\.spec.name)).count == configuration.chain.count, "two links share a name")
        precondition(!configuration.source.name.isEmpty && configuration.source.name.utf8.count <= 31, "source name out of bounds")
        precondition(configuration.socket.mode <= 0o777, "socket mode beyond 0777")
        for link in configuration.chain {
            precondition(JSON.parse(link.spec.configJSON)?.object != nil, "link config is not a JSON object: \(link.spec.configJSON)")
        }
        return true
    }

    static func scenario(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let text = settingsText(bytes) else { return false }
        let scenario: Scenario
        do throws(SettingsError) {
            scenario = try Scenario.parse(try SettingsTable.parse(text, file: "/fuzz/scenario.yaml"))
        } catch {
            checkErrorLine(error, text)
            return false
        }
        precondition(scenario.coins >= 0 && scenario.ratePerSecond > 0, "coins or rate out of range")
        precondition(scenario.mix.contains { $0.weight > 0 }, "a mix without a positive weight")
        // A scenario the parser accepts can be played: draw a few insertions and gaps.
        var generator = InsertionGenerator(scenario: scenario)
        for number in 1...3 {
            let insertion = generator.next()
            precondition(insertion.number == number, "insertions out of order")
            let gap = generator.gap(after: number)
            precondition(gap > 0, "a gap of \(gap) s between insertions")
        }
        return true
    }
}

extension CCTalkParser.Event {
    var isFrame: Bool {
        if case .frame = self { return true }
        return false
    }
}
