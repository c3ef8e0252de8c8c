import CoinMechModel
import Foundation

/// One decision as a line of the decision journal: a JSON object, a tab, and the FNV-1a 64
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
        for value in [record.diameterMM, record.weightG, record.thicknessMM] {
            if let value, !value.isFinite { return nil }
        }
        var json = "{\"v\":1,\"n\":\(number),\"b\":\(batch),\"source\":\(quoted(record.source)),\"epoch\":\(record.epoch),\"devseq\":\(record.deviceSeq)"
        if let value = record.diameterMM { json += ",\"diameter_mm\":\(value)" }
        if let value = record.weightG { json += ",\"weight_g\":\(value)" }
        if let value = record.thicknessMM { json += ",\"thickness_mm\":\(value)" }
        if let value = record.channel { json += ",\"channel\":\(value)" }
        switch record.verdict {
        case .accept(let currency, let code, let valueMinor):
            json += ",\"accept\":{\"currency\":\(quoted(currency)),\"code\":\(quoted(code)),\"value_minor\":\(valueMinor)}"
        case .reject(let reason, let message):
            json += ",\"reject\":{\"reason\":\(quoted(reason)),\"message\":\(quoted(message))}"
        }
        json += ",\"link\":\(quoted(record.link)),\"generation\":\(record.chainGeneration)"
        if let detail = record.detail {
            json += ",\"detail\":{" + detail.sorted { $0.key < $1.key }.map { "\(quoted($0.key)):\(quoted($0.value))" }.joined(separator: ",") + "}"
        }
        json += "}"
        var line = Array(json.utf8)
        line.append(UInt8(ascii: "\t"))
        line += Array(hex(checksum(line.dropLast())).utf8)
        line.append(UInt8(ascii: "\n"))
        return line
    }

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
        var record = DecisionRecord(
            source: source, epoch: epoch, deviceSeq: deviceSeq, diameterMM: (object["diameter_mm"] as? NSNumber)?.doubleValue,
            weightG: (object["weight_g"] as? NSNumber)?.doubleValue, thicknessMM: (object["thickness_mm"] as? NSNumber)?.doubleValue,
            channel: (object["channel"] as? NSNumber)?.uint32Value, verdict: verdict, link: link, chainGeneration: generation)
        record.detail = object["detail"] as? [String: String]
        return .record(record, number: number, batch: batch)
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

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// A JSON string: quotes, backslashes and control characters escaped.
    private static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let digits = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
