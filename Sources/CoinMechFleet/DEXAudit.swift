import Foundation

/// One cabinet's EVA-DTS audit (DEX/UCS, EVA-DTS 6.2) for a period, as the fleet's ledger events
/// tell it: pure, its figures in, the file's data segments out (docs/FLEET.md, "DEX export").
///
/// The period is presented as an audit read at `to` after a reset at `from`: every "since last
/// reset" element counts the events of `from ≤ time < to`, every "since initialisation" element
/// those of the cabinet's whole ledger before `to`, and `EA3` gives both moments. An element
/// the fleet cannot fill truthfully is left empty (only its `*` is sent), never written as 0.
public struct DEXAudit: Sendable, Equatable {
    /// A figure since the last reset (the period) and since initialisation (the ledger's start).
    public struct Figure: Sendable, Equatable {
        public var sinceReset: Int64
        public var sinceInitialisation: Int64
        public init(_ sinceReset: Int64, _ sinceInitialisation: Int64) {
            self.sinceReset = sinceReset
            self.sinceInitialisation = sinceInitialisation
        }
    }

    /// `CA1`: the coin mechanism as it last identified itself before `to`.
    public struct CoinMech: Sendable, Equatable {
        public var serialNumber: String?
        public var model: String?
        public var softwareRevision: String?
        public init(serialNumber: String?, model: String?, softwareRevision: String?) {
            self.serialNumber = serialNumber
            self.model = model
            self.softwareRevision = softwareRevision
        }
    }

    /// `EA2`: an event of the standard's table of events (appendix, Table 1: coin mechanism).
    public struct Event: Sendable, Equatable {
        public var code: String
        public var count: Figure
        /// `EA205`: the event holds at `to`.
        public var active: Bool
        public init(code: String, count: Figure, active: Bool) {
            self.code = code
            self.count = count
            self.active = active
        }
    }

    /// `ID101`, the machine serial number: the cabinet's id.
    public var cabinet: String
    /// `ID104`, the machine location: its site.
    public var site: String?
    /// `ID403`; nil when the cabinet has moved no money before `to` (every value is then 0 in
    /// any currency).
    public var currency: String?
    /// Seconds since 1970 (UTC): the period is `from ≤ time < to`.
    public var from: Double
    public var to: Double
    public var coinMech: CoinMech?
    /// `CA301`/`CA305`: every coin credited.
    public var cashIn: Figure
    /// `CA302`/`CA306`: coins that went to the cash box.
    public var toCashBox: Figure
    /// `CA303`/`CA307`: coins a changer kept in its tubes.
    public var toTubes: Figure
    /// `CA401`/`CA403`: coins paid out; each nil when a manual dispense in that span makes the
    /// figure unknown (the fleet cannot value one).
    public var dispensedSinceReset: Int64?
    public var dispensedSinceInitialisation: Int64?
    public var events: [Event]

    public init(cabinet: String, site: String?, currency: String?, from: Double, to: Double, coinMech: CoinMech?, cashIn: Figure, toCashBox: Figure,
                toTubes: Figure, dispensedSinceReset: Int64?, dispensedSinceInitialisation: Int64?, events: [Event]) {
        self.cabinet = cabinet
        self.site = site
        self.currency = currency
        self.from = from
        self.to = to
        self.coinMech = coinMech
        self.cashIn = cashIn
        self.toCashBox = toCashBox
        self.toTubes = toTubes
        self.dispensedSinceReset = dispensedSinceReset
        self.dispensedSinceInitialisation = dispensedSinceInitialisation
        self.events = events
    }

    /// `DXS01` of the fleet's files. The standard asks for a 3-character manufacturer code from
    /// its appendix B and 7 digits; CMF is not one assigned to the project.
    public static let sender = "CMF0000001"

    /// The whole file: envelope, checks and counts (`DEXWriter`).
    public func file() throws(DEXError) -> String {
        DEXWriter(sender: Self.sender).file(try segments())
    }

    /// The transaction set's data segments, in the standard's order.
    public func segments() throws(DEXError) -> [DEXSegment] {
        let id = DEXSegment.alphanumeric(cabinet)
        guard (1...20).contains(id.count) else {
            throw DEXError("cabinet id '\(cabinet)' is \(id.count) characters as EVA-DTS writes it; ID101 (machine serial number) holds 1 to 20")
        }
        var out: [DEXSegment] = []
        // ID1: ID101 serial, ID102 model, ID103 build standard, ID104 location (AN 01/30).
        out.append(DEXSegment("ID1", [id, nil, nil, site.map(DEXSegment.alphanumeric).flatMap { (1...30).contains($0.count) ? $0 : nil }]))
        if let currency {
            guard Self.isCurrencyCode(currency) else { throw DEXError("'\(currency)' is not an ISO 4217 currency code") }
            // ID4: ID401 decimal point position, ID402 numeric code (left out), ID403 alphabetic code.
            out.append(DEXSegment("ID4", ["\(Self.decimalPlaces(currency))", nil, currency]))
        }
        if let mech = coinMech {
            // CA1: CA101 serial number (AN 01/20), CA102 model (AN 01/20), CA103 software revision (N0 01/04).
            let serial = mech.serialNumber.map(DEXSegment.alphanumeric).flatMap { (1...20).contains($0.count) ? $0 : nil }
            let model = mech.model.map(DEXSegment.alphanumeric).flatMap { (1...20).contains($0.count) ? $0 : nil }
            let software = mech.softwareRevision.flatMap { (1...4).contains($0.count) && $0.allSatisfy({ $0.isASCII && $0.isNumber }) ? $0 : nil }
            // CA101 is mandatory once CA1 is sent.
            if let serial { out.append(DEXSegment("CA1", [serial, model, software])) }
        }
        // CA3: CA301 cash in, CA302 to the cash box, CA303 to tubes, CA304 bills (left out);
        // CA305–CA307 the same since initialisation, CA308 bills (left out).
        out.append(DEXSegment("CA3", [try Self.money(cashIn.sinceReset, "CA301"), try Self.money(toCashBox.sinceReset, "CA302"),
                                      try Self.money(toTubes.sinceReset, "CA303"), nil,
                                      try Self.money(cashIn.sinceInitialisation, "CA305"), try Self.money(toCashBox.sinceInitialisation, "CA306"),
                                      try Self.money(toTubes.sinceInitialisation, "CA307")]))
        // CA4: CA401 dispensed, CA402 manual (left out), CA403 dispensed since initialisation.
        if dispensedSinceReset != nil || dispensedSinceInitialisation != nil {
            out.append(DEXSegment("CA4", [try dispensedSinceReset.map { v throws(DEXError) in try Self.money(v, "CA401") }, nil,
                                          try dispensedSinceInitialisation.map { v throws(DEXError) in try Self.money(v, "CA403") }]))
        }
        // 2.8.1: an event is sent only if it occurred in the period or is active at its end.
        for event in events where event.count.sinceReset > 0 || event.active {
            // EA2: EA201 event id, EA202 since last reset, EA203 since initialisation, EA204 user
            // defined (left out), EA205 activity (1 active, 0 inactive).
            out.append(DEXSegment("EA2", [event.code, try Self.count(event.count.sinceReset, "EA202 (\(event.code))"),
                                          try Self.count(event.count.sinceInitialisation, "EA203 (\(event.code))"), nil, event.active ? "1" : "0"]))
        }
        // EA3: EA301 reads with reset (left out), EA302/EA303 this read, EA304 terminal (left
        // out), EA305/EA306 the last read.
        let (toDate, toTime) = Self.dateTime(to), (fromDate, fromTime) = Self.dateTime(from)
        out.append(DEXSegment("EA3", [nil, toDate, toTime, nil, fromDate, fromTime]))
        return out
    }

    /// An Nc element: a whole number of minor units, 1 to 8 digits.
    static func money(_ value: Int64, _ element: String) throws(DEXError) -> String {
        guard (0...99_999_999).contains(value) else { throw DEXError("\(element) would be \(value) minor units; EVA-DTS holds 0 to 99,999,999 (8 digits)") }
        return "\(value)"
    }

    /// An N0 count of events, 1 to 6 digits.
    static func count(_ value: Int64, _ element: String) throws(DEXError) -> String {
        guard (0...999_999).contains(value) else { throw DEXError("\(element) would be \(value); EVA-DTS holds 0 to 999,999 (6 digits)") }
        return "\(value)"
    }

    /// DT (YYYYMMDD) and TM (HHMMSS) in UTC, to the whole second below.
    static func dateTime(_ time: Double) -> (String, String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: time.rounded(.down)))
        func two(_ n: Int?) -> String { n.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        return ("\(c.year ?? 0)\(two(c.month))\(two(c.day))", "\(two(c.hour))\(two(c.minute))\(two(c.second))")
    }

    /// Three upper-case ASCII letters, as ISO 4217's alphabetic codes are: the one check the
    /// export, its command and the dashboard's forms make.
    public static func isCurrencyCode(_ text: String) -> Bool { text.count == 3 && text.allSatisfy { $0.isASCII && $0.isUppercase } }

    /// `ID401`: the currency's minor unit (ISO 4217), in which the ledger's `value_minor` counts.
    public static func decimalPlaces(_ currency: String) -> Int {
        if ["BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF"].contains(currency) { return 0 }
        if ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"].contains(currency) { return 3 }
        return 2
    }

    /// The name an export is saved under: `<cabinet>_<from>_<to>.dex`, UTC.
    public var fileName: String {
        let (a, b) = Self.dateTime(from), (c, d) = Self.dateTime(to)
        return "\(cabinet)_\(a)T\(b)Z_\(c)T\(d)Z.dex"
    }
}
