import CoinMechModel

/// What the parser found in the byte stream.
public enum FrameEvent: Sendable, Hashable {
    case frame(SerialFrame)
    case error(FrameError)
}

/// Turns a byte stream into sentences. Feed it whatever `read` returned; it keeps partial
/// sentences between calls, skips garbage, and never holds more than one sentence's bytes.
public struct FrameParser: Sendable {
    private var sentence: [UInt8] = []
    private var inSentence = false
    private var garbage = 0
    private var skippingOverlong = 0
    public private(set) var errors = FrameErrorCounts()

    public init() { sentence.reserveCapacity(SerialFrame.maximumLength) }

    /// Carries error counts over from an earlier parser (after a reconnect).
    public mutating func restoreCounts(_ counts: FrameErrorCounts) { errors = counts }

    /// Parses `bytes`, reporting each sentence or error in stream order.
    public mutating func feed(_ bytes: some Sequence<UInt8>, _ emit: (FrameEvent) -> Void) {
        // The byte loop runs over a buffer, not through the generic sequence: unspecialised
        // across modules, the generic loop cost hundreds of instructions a byte.
        let fed: Void? = bytes.withContiguousStorageIfAvailable { feed(buffer: $0, emit) }
        if fed == nil { Array(bytes).withUnsafeBufferPointer { feed(buffer: $0, emit) } }
    }

    private mutating func feed(buffer bytes: UnsafeBufferPointer<UInt8>, _ emit: (FrameEvent) -> Void) {
        for byte in bytes {
            if skippingOverlong > 0 {
                // Inside an overlong sentence: drop everything up to its end or the next `$`.
                if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "$") {
                    report(.overlong(byteCount: skippingOverlong), emit)
                    skippingOverlong = 0
                    if byte == UInt8(ascii: "$") { start() }
                } else {
                    skippingOverlong += 1
                }
                continue
            }
            if byte == UInt8(ascii: "$") {
                flushGarbage(emit)
                if inSentence { report(.truncated(sentence: text(sentence)), emit) }
                start()
                continue
            }
            guard inSentence else {
                if byte != UInt8(ascii: "\r") && byte != UInt8(ascii: "\n") { garbage += 1 }
                continue
            }
            if byte == UInt8(ascii: "\n") {
                inSentence = false
                emit(parse(sentence))
                continue
            }
            sentence.append(byte)
            if sentence.count >= SerialFrame.maximumLength {
                inSentence = false
                skippingOverlong = sentence.count
                sentence.removeAll(keepingCapacity: true)
            }
        }
        flushGarbage(emit)
    }

    private mutating func start() {
        inSentence = true
        sentence.removeAll(keepingCapacity: true)
        sentence.append(UInt8(ascii: "$"))
    }

    private mutating func flushGarbage(_ emit: (FrameEvent) -> Void) {
        if garbage > 0 {
            report(.garbage(byteCount: garbage), emit)
            garbage = 0
        }
    }

    private mutating func report(_ error: FrameError, _ emit: (FrameEvent) -> Void) {
        errors.count(error)
        emit(.error(error))
    }

    private mutating func parse(_ raw: [UInt8]) -> FrameEvent {
        var line = raw
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        var shown: String { text(line) }
        guard line.count >= 4, let star = line.lastIndex(of: UInt8(ascii: "*")), line.count - star == 3,
              let expected = Self.hexValue(line[star + 1], line[star + 2]) else {
            return failure(.malformed(sentence: shown, reason: "no *HH checksum"))
        }
        let body = line[1..<star]
        guard SerialFrame.checksum(body) == expected else { return failure(.badChecksum(sentence: shown)) }
        let fields = body.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map { text($0) }
        do throws(FieldError) {
            let frame = try Self.frame(fields)
            return .frame(frame)
        } catch {
            return failure(.malformed(sentence: shown, reason: error.reason))
        }
    }

    private mutating func failure(_ error: FrameError) -> FrameEvent {
        errors.count(error)
        return .error(error)
    }

    struct FieldError: Error { let reason: String }

    static func frame(_ fields: [String]) throws(FieldError) -> SerialFrame {
        switch fields.first {
        case "CMR":
            guard (4...9).contains(fields.count) else { throw FieldError(reason: "CMR takes 3 to 8 fields") }
            let thickness: Double? = fields.count >= 5 && !fields[4].isEmpty ? try measure(fields[4], .thickness) : nil
            // The clock may be left empty only when the alloy fields follow it.
            let clock: UInt64? = fields.count >= 6 && !(fields[5].isEmpty && fields.count > 6) ? try number(fields[5], "mech clock") : nil
            var reading = SensorReading(
                deviceSeq: try number(fields[1], "device sequence"), diameterMM: try measure(fields[2], .diameter),
                weightG: try measure(fields[3], .weight), thicknessMM: thickness, mechMilliseconds: clock)
            switch alloy(Array(fields.dropFirst(6))) {
            case .success(let signature): reading.alloy = signature
            case .failure(let fault): reading.alloyFault = fault
            }
            return .reading(reading)
        case "CMD":
            guard fields.count == 3, fields[2] == "A" || fields[2] == "R" else { throw FieldError(reason: "CMD takes devseq and A or R") }
            return .decision(deviceSeq: try number(fields[1], "device sequence"), accept: fields[2] == "A")
        case "CMC":
            guard fields.count == 3, let fate = CoinFate(rawValue: fields[2]), fate != .unknown else {
                throw FieldError(reason: "CMC takes devseq and S or R")
            }
            return .confirmation(deviceSeq: try number(fields[1], "device sequence"), fate: fate)
        case "CMQ":
            guard fields.count == 3 else { throw FieldError(reason: "CMQ takes boot and devseq") }
            return .query(boot: try number(fields[1], "boot"), deviceSeq: try number(fields[2], "device sequence"))
        case "CMJ":
            guard fields.count == 4, let fate = CoinFate(rawValue: fields[3]) else { throw FieldError(reason: "CMJ takes boot, devseq and S, R or U") }
            return .journal(boot: try number(fields[1], "boot"), deviceSeq: try number(fields[2], "device sequence"), fate: fate)
        case "CMH":
            guard fields.count == 1 else { throw FieldError(reason: "CMH takes no fields") }
            return .hello
        case "CMS":
            guard fields.count == 2 || fields.count == 3, let status = MechStatus(rawValue: fields[1]) else {
                throw FieldError(reason: "unknown status")
            }
            return .status(status, detail: fields.count == 3 ? fields[2] : nil)
        case "CMI":
            guard fields.count == 2, fields[1] == "0" || fields[1] == "1" else { throw FieldError(reason: "CMI takes 0 or 1") }
            return .inhibit(fields[1] == "1")
        default:
            throw FieldError(reason: "unknown sentence type")
        }
    }

    /// The alloy fields after the mech clock: conductivity at the low and the high frequency
    /// (% IACS) and, optionally, the permeability. An empty field is one not sent. Figures that
    /// cannot be measurements do not make the sentence malformed: the reading stands (its coin is
    /// there, waiting for an answer) and carries the fault, so the host returns it at once with a
    /// reason naming the field instead of leaving it to the mech's deadline.
    static func alloy(_ fields: [String]) -> Result<AlloySignature?, AlloyFault> {
        let names: [AlloyFault.Field] = [.conductivityLow, .conductivityHigh, .permeability]
        var values: [Double?] = [nil, nil, nil]
        for (index, field) in fields.enumerated() where !field.isEmpty {
            guard field.count <= 16, let value = Double(field), field.utf8.allSatisfy(Self.isPlainNumberByte) else {
                let shown = field.count <= 16 ? field : String(field.prefix(16)) + "…"
                return .failure(AlloyFault(names[index], "\(names[index].rawValue) '\(shown)' is not a number"))
            }
            values[index] = value
        }
        return AlloySignature.checked(lowIACS: values[0], highIACS: values[1], permeability: values[2])
    }

    /// Digits, a sign, a point, an exponent: what a firmware's printf writes (not "nan", "inf" or hex).
    static func isPlainNumberByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }

    static func number(_ field: String, _ name: String) throws(FieldError) -> UInt64 {
        guard let value = UInt64(field) else { throw FieldError(reason: "bad \(name) '\(field)'") }
        return value
    }

    /// What a coin's measurement on each axis may be: beyond it, the figure is a fault of the
    /// sensor or the line, not a coin.
    enum Axis: String {
        case diameter, weight, thickness

        /// The largest figure a coin mech could measure (mm or g): ten times the largest coin.
        var limit: Double {
            switch self {
            case .diameter: 500
            case .weight: 1000
            case .thickness: 100
            }
        }
    }

    /// A measurement as mech firmware prints it: a plain decimal. NaN, infinities, negative
    /// and absurd figures are malformed: they would be stored as NULL, compare unequal to
    /// themselves (breaking duplicate detection) and mean a broken sensor, not a coin.
    static func measure(_ field: String, _ axis: Axis) throws(FieldError) -> Double {
        guard !field.isEmpty, field.count <= 16, let value = Double(field) else { throw FieldError(reason: "bad \(axis.rawValue) '\(field)'") }
        guard value.isFinite, value >= 0, value <= axis.limit else {
            throw FieldError(reason: "\(axis.rawValue) '\(field)' is not a measurement (0 to \(Int(axis.limit)))")
        }
        return value
    }

    static func hexValue(_ high: UInt8, _ low: UInt8) -> UInt8? {
        func digit(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        guard let h = digit(high), let l = digit(low) else { return nil }
        return h << 4 | l
    }

    func text(_ bytes: some Collection<UInt8>) -> String {
        if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes.map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}
