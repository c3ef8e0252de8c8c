import CoinMechModel
import Foundation

/// One decision as a line of the decision journal: a JSON object (with `t_us`, the time it was
/// decided as the ledger and its subscribers see it, in microseconds), a tab, and the FNV-1a 64
/// checksum of the object's bytes in 16 hex digits, then a newline. A line cut short by a
/// crash, or garbled, fails its checksum; nothing written by a whole append can. `n` numbers
/// the lines (one more than the line before) and `b` the appends: a crash can tear only the
/// last append, so a damaged line followed by a good line of a later append is not a crash's.
///
/// Hand-written rather than `JSONEncoder`: it is built on the answer's path, before the sync.
enum DecisionJournalLine {
    /// The line for `record`, or nil for one the format cannot carry exactly (a measurement
    /// that is not a finite number): such a batch is committed to the ledger before it is
    /// answered instead.
    static func encode(_ record: DecisionRecord, number: UInt64, batch: UInt64) -> [UInt8]? {
        for value in [record.diameterMM, record.weightG, record.thicknessMM, record.alloy?.lowIACS, record.alloy?.highIACS, record.alloy?.permeability] {
            if let value, !value.isFinite { return nil }
        }
        var line: [UInt8] = []
        line.reserveCapacity(320)
        func raw(_ text: StaticString) { line.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)) }
        func text(_ value: String) { line.append(contentsOf: value.utf8) }
        func quoted(_ value: String) {
            line.append(UInt8(ascii: "\""))
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\""): raw("\\\"")
                case UInt8(ascii: "\\"): raw("\\\\")
                case UInt8(ascii: "\n"): raw("\\n")
                case UInt8(ascii: "\r"): raw("\\r")
                case UInt8(ascii: "\t"): raw("\\t")
                case ..<0x20:
                    raw("\\u00")
                    line.append(hexDigit(byte >> 4))
                    line.append(hexDigit(byte & 0xF))
                default: line.append(byte)
                }
            }
            line.append(UInt8(ascii: "\""))
        }
        raw("{\"v\":1,\"n\":"); text(String(number))
        raw(",\"b\":"); text(String(batch))
        raw(",\"source\":"); quoted(record.source)
        raw(",\"epoch\":"); text(String(record.epoch))
        raw(",\"devseq\":"); text(String(record.deviceSeq))
        if let value = record.diameterMM { raw(",\"diameter_mm\":"); text(value.description) }
        if let value = record.weightG { raw(",\"weight_g\":"); text(value.description) }
        if let value = record.thicknessMM { raw(",\"thickness_mm\":"); text(value.description) }
        if let value = record.channel { raw(",\"channel\":"); text(String(value)) }
        if let alloy = record.alloy {
            raw(",\"conductivity_low_iacs\":"); text(alloy.lowIACS.description)
            raw(",\"conductivity_high_iacs\":"); text(alloy.highIACS.description)
            if let value = alloy.permeability { raw(",\"permeability\":"); text(value.description) }
        }
        switch record.verdict {
        case .accept(let currency, let code, let valueMinor):
            raw(",\"accept\":{\"currency\":"); quoted(currency)
            raw(",\"code\":"); quoted(code)
            raw(",\"value_minor\":"); text(String(valueMinor)); raw("}")
        case .reject(let reason, let message):
            raw(",\"reject\":{\"reason\":"); quoted(reason)
            raw(",\"message\":"); quoted(message); raw("}")
        }
        raw(",\"link\":"); quoted(record.link)
        raw(",\"generation\":"); text(String(record.chainGeneration))
        // Whole microseconds, an integer: the time reads back as exactly the same number.
        if let time = record.time, let micros = microseconds(time) { raw(",\"t_us\":"); text(String(micros)) }
        if let detail = record.detail {
            raw(",\"detail\":{")
            for (index, entry) in detail.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { raw(",") }
                quoted(entry.key); raw(":"); quoted(entry.value)
            }
            raw("}")
        }
        raw("}")
        let sum = checksum(line)
        line.append(UInt8(ascii: "\t"))
        for shift in stride(from: 60, through: 0, by: -4) { line.append(hexDigit(UInt8((sum >> UInt64(shift)) & 0xF))) }
        line.append(UInt8(ascii: "\n"))
        return line
    }

    /// Times a line carries: whole microseconds from 1970 to the year 2255, 2^53 − 1 of them, all
    /// of which a `Double` holds exactly.
    static let microsecondRange: ClosedRange<Int64> = 0...((1 << 53) - 1)

    /// `time` (seconds since 1970) in whole microseconds, if it is in `microsecondRange`.
    static func microseconds(_ time: Double) -> Int64? {
        guard let micros = Int64(exactly: (time * 1e6).rounded()), microsecondRange.contains(micros) else { return nil }
        return micros
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10 }

    /// What a line of the journal holds.
    enum Decoded: Equatable {
        case record(DecisionRecord, number: UInt64, batch: UInt64)
        /// Its checksum does not match, or it is not a record: cut short or garbled.
        case damaged
    }

    /// Reads one line (without its newline).
    static func decode<Bytes: Collection<UInt8>>(_ line: Bytes) -> Decoded {
        let bytes = Array(line)
        guard let tab = bytes.lastIndex(of: UInt8(ascii: "\t")), bytes.count - tab - 1 == 16,
              let sum = UInt64(String(decoding: bytes[(tab + 1)...], as: UTF8.self), radix: 16),
              sum == checksum(bytes[..<tab]),
              let object = try? JSONSerialization.jsonObject(with: Data(bytes[..<tab])) as? [String: Any],
              object["v"] as? Int == 1, let number = (object["n"] as? NSNumber)?.uint64Value,
              let batch = (object["b"] as? NSNumber)?.uint64Value,
              let source = object["source"] as? String, let epoch = (object["epoch"] as? NSNumber)?.int64Value,
              let deviceSeq = (object["devseq"] as? NSNumber)?.uint64Value, let link = object["link"] as? String,
              let generation = (object["generation"] as? NSNumber)?.uint64Value
        else { return .damaged }
        let verdict: DecisionRecord.Verdict
        if let accept = object["accept"] as? [String: Any], let currency = accept["currency"] as? String, let code = accept["code"] as? String,
           let value = (accept["value_minor"] as? NSNumber)?.int64Value {
            verdict = .accept(currency: currency, code: code, valueMinor: value)
        } else if let reject = object["reject"] as? [String: Any], let reason = reject["reason"] as? String, let message = reject["message"] as? String {
            verdict = .reject(reason: reason, message: message)
        } else {
            return .damaged
        }
        let body = bytes[..<tab]
        func figure(_ key: String) -> Double? { Self.figure(key, in: body) ?? (object[key] as? NSNumber)?.doubleValue }
        var record = DecisionRecord(
            source: source, epoch: epoch, deviceSeq: deviceSeq, diameterMM: figure("diameter_mm"), weightG: figure("weight_g"),
            thicknessMM: figure("thickness_mm"), channel: (object["channel"] as? NSNumber)?.uint32Value, verdict: verdict, link: link,
            chainGeneration: generation)
        record.detail = object["detail"] as? [String: String]
        if let written = object["t_us"] {
            // Whole microseconds since 1970, as `encode` writes them: anything else is not its line.
            guard let number = written as? NSNumber, let micros = Int64(exactly: number.doubleValue), microsecondRange.contains(micros) else { return .damaged }
            record.time = Double(micros) / 1e6
        }
        if object["conductivity_low_iacs"] != nil, object["conductivity_high_iacs"] != nil,
           let low = figure("conductivity_low_iacs"), let high = figure("conductivity_high_iacs") {
            record.alloy = AlloySignature(lowIACS: low, highIACS: high, permeability: object["permeability"] != nil ? figure("permeability") : nil)
        }
        return .record(record, number: number, batch: batch)
    }

    /// A figure read back from its own text, as `encode` wrote it (`description`: the shortest
    /// text that is exactly the double): JSONSerialization on Linux can land an ulp off
    /// (0.30000000000000004 came back as 0.3000000000000001), and a recovered decision must be
    /// the one recorded. The key is found at the top level: inside a JSON string its quotes
    /// would be escaped.
    static func figure(_ key: String, in body: ArraySlice<UInt8>) -> Double? {
        let pattern = Array(",\"\(key)\":".utf8)
        guard body.count > pattern.count else { return nil }
        var index = body.startIndex
        while index <= body.endIndex - pattern.count {
            if body[index] == pattern[0], body[index..<(index + pattern.count)].elementsEqual(pattern) {
                let start = index + pattern.count
                let end = body[start...].firstIndex { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "}") } ?? body.endIndex
                return Double(String(decoding: body[start..<end], as: UTF8.self))
            }
            index += 1
        }
        return nil
    }

    /// FNV-1a, 64 bits: enough to tell a torn or garbled line, cheap on the answer's path.
    static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
