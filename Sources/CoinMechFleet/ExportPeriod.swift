import Foundation

/// The period an export covers, `from ≤ time < to`, as an operator writes it: an ISO 8601 date
/// (`2026-11-01`, midnight UTC) or date and time with its zone (`2026-11-01T06:00:00Z`,
/// `2026-11-01T07:00:00+01:00`).
public struct ExportPeriod: Sendable, Equatable {
    public var from: Double
    public var to: Double

    public init(from: String, to: String) throws(DEXError) {
        guard let start = Self.time(from) else { throw DEXError("the start '\(from.prefix(40))' is not a date (2026-11-01) or a date and time with its zone (2026-11-01T06:00:00Z)") }
        guard let end = Self.time(to) else { throw DEXError("the end '\(to.prefix(40))' is not a date (2026-11-01) or a date and time with its zone (2026-11-01T06:00:00Z)") }
        guard start < end else { throw DEXError("the period is empty: its start \(from) is not before its end \(to)") }
        self.from = start
        self.to = end
    }

    static func time(_ text: String) -> Double? {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard text.count <= 40, Self.calendarValid(text) else { return nil }
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        day.timeZone = TimeZone(identifier: "UTC")
        if text.count == 10, let date = day.date(from: text) { return date.timeIntervalSince1970 }
        let moment = ISO8601DateFormatter()
        moment.formatOptions = [.withInternetDateTime]
        if let date = moment.date(from: text) { return date.timeIntervalSince1970 }
        moment.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return moment.date(from: text)?.timeIntervalSince1970
    }

    /// ISO8601DateFormatter rolls an impossible date or time over (2026-02-30 is read as March 2,
    /// 24:30 as the next day): the fields are checked first.
    static func calendarValid(_ text: String) -> Bool {
        let u = Array(text.utf8)
        func number(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= u.count, u[at..<(at + count)].allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return u[at..<(at + count)].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), (1...12).contains(month) else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...days).contains(day) else { return false }
        guard u.count > 10 else { return true }
        guard let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2) else { return false }
        return hour <= 23 && minute <= 59 && second <= 59
    }
}
