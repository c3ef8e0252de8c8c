import CoinFacts
import CoinMechModel
import CoinMechSettings

/// Measurement noise of one axis: σ relative to the nominal figure, or absolute.
public struct Noise: Sendable, Hashable {
    public var sigma: Double
    public var absolute: Bool

    public init(sigma: Double, absolute: Bool = false) {
        self.sigma = sigma
        self.absolute = absolute
    }

    public func apply(_ nominal: Double, _ rng: inout SplitMix64) -> Double {
        nominal + rng.gaussian() * (absolute ? sigma : sigma * nominal)
    }
}

/// A simulated session: what coins the mech sees, how it measures them, and what goes wrong.
/// Every key is documented in docs/SIMULATOR.md.
public struct Scenario: Sendable {
    public var name = "scenario"
    public var seed: UInt64 = 1
    /// Insertions to make; 0 means until stopped.
    public var coins = 100
    /// Mean insertions per second (gaps are exponential).
    public var ratePerSecond = 3.0
    public var deadlineMilliseconds = 50.0
    /// Whether the mech measures thickness.
    public var measuresThickness = true
    public var currency = "USD"
    /// Relative weights of the currency's denominations.
    public var mix: [(code: String, weight: Double)] = []
    public var diameterNoise = Noise(sigma: 0.004)
    public var weightNoise = Noise(sigma: 0.006)
    public var thicknessNoise = Noise(sigma: 0.01)
    public var slugFraction = 0.0
    public var washerFraction = 0.0
    public var foreignFraction = 0.0
    public var foreignCurrency = "EUR"
    /// Known foreign twins of the currency's coins (`WorldCoins.twins`): the 10 baht for the €2 …
    public var twinFraction = 0.0
    /// Frauds made to pass for the currency's coins, by kind (`FraudItem.Attack`).
    public var fraudFractions: [FraudItem.Attack: Double] = [:]
    /// The mech's eddy-current sensor (the `alloy` block); nil: it measures no alloy axis.
    public var alloy: AlloySensorSettings?
    public var burst: Burst?
    public var faults = Faults()
    /// How the simulated mech's firmware speaks: line speed, confirmations, its clock, its boot.
    public var firmware = Firmware()

    /// The mech's side of the line protocol (`baud` and the `firmware` block).
    public struct Firmware: Sendable, Hashable {
        /// Line speed: every byte takes 10 bits of it, both ways (0: no pacing, bytes arrive at once).
        public var baud = 9600
        /// Protocol version 2: confirms each accepted coin (`$CMC`), answers queries (`$CMQ`)
        /// and hellos (`$CMH`), and names its boot on power-up. Off: an older firmware.
        public var confirmations = true
        /// Stamps each reading with its own millisecond clock.
        public var clock = true
        /// How long an accepted coin takes from the gate to the cash-box sensor (ms).
        public var storeMilliseconds = 120.0
        /// The mech's boot number at the start of the session (its power-up count).
        public var firstBoot: UInt64 = 1

        public init() {}
    }

    /// The mech's bias and drift, and the coins' mint spread (`mech` block; see MechErrors).
    public var mech = MechErrors()
    /// The ccTalk acceptor `--protocol cctalk` plays (`cctalk` block; see CCTalkScenario).
    public var cctalk = CCTalkScenario()
    /// The MDB changer's faults under `--protocol mdb` (`mdb` block; see MDBScenario).
    public var mdb = MDBScenario()

    public struct Burst: Sendable, Hashable {
        public var everySeconds: Double
        public var coins: Int
        public var ratePerSecond: Double

        public init(everySeconds: Double, coins: Int, ratePerSecond: Double) {
            self.everySeconds = everySeconds
            self.coins = coins
            self.ratePerSecond = ratePerSecond
        }
    }

    public struct Faults: Sendable, Hashable {
        public var garbage = 0.0
        public var garbageBytes = 12
        public var badChecksum = 0.0
        public var truncated = 0.0
        public var overlong = 0.0
        public var duplicate = 0.0
        public var jamAt: [Int] = []
        public var powerCycleAt: [Int] = []
        public var disconnectAt: [Int] = []
        public var disconnectMilliseconds = 500.0
        /// Accepted coins that bounce back out instead of reaching the cash box (`$CMC,…,R`).
        public var bounce = 0.0
        /// Confirmations the line loses (the coin is stored; the host must ask).
        public var lostConfirmation = 0.0
        /// Insertions whose coin, once accepted, loses the mech's power before it reaches the
        /// cash box: where it ends is chance, and the mech's journal cannot say (`U`).
        public var powerLossAt: [Int] = []
        /// Insertions whose reading the firmware measures again and sends once more under the
        /// same number with the new figures: to the host, a number that goes back with another
        /// measurement.
        public var falseDuplicateAt: [Int] = []
        /// Every Nth time the host goes away (closes the line), the mech reboots while nobody
        /// listens: what waited for an answer is returned, what was falling ends by chance with
        /// no record, and the next boot number is only learnt at the next connect. 0: never.
        public var rebootWhileAwayEvery = 0
    }

    public init() {}

    public static let topKeys: Set<String> = [
        "name", "seed", "coins", "rate_per_s", "deadline_ms", "thickness", "currency", "mix", "noise", "others",
        "bursts", "faults", "baud", "firmware", "mech", "cctalk", "mdb", "alloy",
    ]

    /// Reads a scenario file; errors name the file, the line and the key.
    public static func load(path: String) throws(SettingsError) -> Scenario {
        try parse(SettingsTable.load(path: path), defaultName: Self.stem(path))
    }

    public static func parse(_ table: SettingsTable, defaultName: String = "scenario") throws(SettingsError) -> Scenario {
        try table.rejectUnknownKeys(topKeys)
        var s = Scenario()
        s.name = try table.string("name") ?? defaultName
        if let seed = try table.int("seed") {
            guard seed >= 0 else { throw table.error("seed", "must not be negative") }
            s.seed = UInt64(seed)
        }
        s.coins = try table.int("coins") ?? s.coins
        guard s.coins >= 0 else { throw table.error("coins", "must be 0 (endless) or more") }
        s.ratePerSecond = try positive(table, "rate_per_s", max: 1000) ?? s.ratePerSecond
        s.deadlineMilliseconds = try positive(table, "deadline_ms", max: 10_000) ?? s.deadlineMilliseconds
        s.measuresThickness = try table.bool("thickness") ?? s.measuresThickness
        s.currency = (try table.string("currency") ?? s.currency).uppercased()
        guard let coins = CoinTables.table(for: s.currency) else {
            throw table.error("currency", "no coin table for '\(s.currency)' (known: USD, EUR, GBP)")
        }
        if let mix = try table.table("mix") {
            for key in mix.keys {
                guard coins.contains(where: { $0.code == key }) else {
                    throw mix.error(key, "not a \(s.currency) denomination (known: \(coins.map(\.code).joined(separator: ", ")))")
                }
                let weight = try mix.double(key)!
                guard weight >= 0 else { throw mix.error(key, "must not be negative") }
                s.mix.append((key, weight))
            }
            guard s.mix.contains(where: { $0.weight > 0 }) else { throw table.error("mix", "needs at least one positive weight") }
        } else {
            s.mix = coins.map { ($0.code, 1) }
        }
        if let noise = try table.table("noise") {
            try noise.rejectUnknownKeys(["diameter", "weight", "thickness"])
            s.diameterNoise = try parseNoise(noise, "diameter") ?? s.diameterNoise
            s.weightNoise = try parseNoise(noise, "weight") ?? s.weightNoise
            s.thicknessNoise = try parseNoise(noise, "thickness") ?? s.thicknessNoise
        }
        if let others = try table.table("others") {
            try others.rejectUnknownKeys(Set(["slug", "washer", "foreign", "foreign_currency", "twin"] + FraudItem.Attack.allCases.map(\.rawValue)))
            s.slugFraction = try fraction(others, "slug") ?? 0
            s.washerFraction = try fraction(others, "washer") ?? 0
            s.foreignFraction = try fraction(others, "foreign") ?? 0
            s.twinFraction = try fraction(others, "twin") ?? 0
            for attack in FraudItem.Attack.allCases {
                if let share = try fraction(others, attack.rawValue) { s.fraudFractions[attack] = share }
            }
            let named = try others.string("foreign_currency")
            s.foreignCurrency = (named ?? s.foreignCurrency).uppercased()
            // Only a scenario that feeds foreign coins, or names their currency, needs one other
            // than its own (a EUR scenario of slugs alone keeps the default, EUR, unused).
            guard named == nil && s.foreignFraction == 0 || CoinTables.table(for: s.foreignCurrency) != nil && s.foreignCurrency != s.currency else {
                throw others.error("foreign_currency", "must be a known currency other than \(s.currency)")
            }
            guard s.slugFraction + s.washerFraction + s.foreignFraction + s.twinFraction + s.fraudFractions.values.reduce(0, +) <= 1 else {
                throw table.error("others", "fractions add up to more than 1")
            }
        }
        if let bursts = try table.table("bursts") {
            try bursts.rejectUnknownKeys(["every_s", "coins", "rate_per_s"])
            guard let every = try positive(bursts, "every_s", max: 86_400) else { throw bursts.error("every_s", "is required") }
            guard let count = try bursts.int("coins"), (1...1_000_000).contains(count) else {
                throw bursts.error("coins", "must be a whole number from 1 to 1000000")
            }
            s.burst = Burst(everySeconds: every, coins: count, ratePerSecond: try positive(bursts, "rate_per_s", max: 1000) ?? 20)
        }
        if let faults = try table.table("faults") {
            try faults.rejectUnknownKeys([
                "garbage", "garbage_bytes", "bad_checksum", "truncated", "overlong", "duplicate", "jam_at",
                "power_cycle_at", "disconnect_at", "disconnect_ms", "bounce", "lost_confirmation", "power_loss_at",
                "false_duplicate_at", "reboot_while_away_every",
            ])
            var f = Faults()
            f.garbage = try fraction(faults, "garbage") ?? 0
            f.garbageBytes = try faults.int("garbage_bytes") ?? f.garbageBytes
            guard (1...200).contains(f.garbageBytes) else { throw faults.error("garbage_bytes", "must be between 1 and 200") }
            f.badChecksum = try fraction(faults, "bad_checksum") ?? 0
            f.truncated = try fraction(faults, "truncated") ?? 0
            f.overlong = try fraction(faults, "overlong") ?? 0
            f.duplicate = try fraction(faults, "duplicate") ?? 0
            f.jamAt = try insertionNumbers(faults, "jam_at")
            f.powerCycleAt = try insertionNumbers(faults, "power_cycle_at")
            f.disconnectAt = try insertionNumbers(faults, "disconnect_at")
            f.disconnectMilliseconds = try positive(faults, "disconnect_ms", max: 600_000) ?? f.disconnectMilliseconds
            f.bounce = try fraction(faults, "bounce") ?? 0
            f.lostConfirmation = try fraction(faults, "lost_confirmation") ?? 0
            f.powerLossAt = try insertionNumbers(faults, "power_loss_at")
            f.falseDuplicateAt = try insertionNumbers(faults, "false_duplicate_at")
            f.rebootWhileAwayEvery = try faults.int("reboot_while_away_every") ?? 0
            guard (0...10_000).contains(f.rebootWhileAwayEvery) else {
                throw faults.error("reboot_while_away_every", "must be a whole number from 0 (never) to 10000")
            }
            s.faults = f
        }
        if let baud = try table.int("baud") {
            guard baud == 0 || [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200].contains(baud) else {
                throw table.error("baud", "must be 0 (no pacing) or one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200")
            }
            s.firmware.baud = baud
        }
        if let firmware = try table.table("firmware") {
            try firmware.rejectUnknownKeys(["confirmations", "clock", "store_ms", "boot"])
            s.firmware.confirmations = try firmware.bool("confirmations") ?? s.firmware.confirmations
            s.firmware.clock = try firmware.bool("clock") ?? s.firmware.clock
            s.firmware.storeMilliseconds = try positive(firmware, "store_ms", max: 10_000) ?? s.firmware.storeMilliseconds
            if let boot = try firmware.int("boot") {
                guard boot >= 1 else { throw firmware.error("boot", "must be 1 or more") }
                s.firmware.firstBoot = UInt64(boot)
            }
        }
        if !s.firmware.confirmations, s.faults.bounce > 0 || s.faults.lostConfirmation > 0 || !s.faults.powerLossAt.isEmpty {
            throw table.error("faults", "bounce, lost_confirmation and power_loss_at need a mech with confirmations")
        }
        if !s.firmware.confirmations, s.faults.rebootWhileAwayEvery > 0 {
            throw table.error("faults", "reboot_while_away_every needs a mech that names its boot (firmware.confirmations)")
        }
        if let mech = try table.table("mech") {
            s.mech = try MechErrors.parse(mech)
        }
        if let cctalk = try table.table("cctalk") {
            s.cctalk = try CCTalkScenario.parse(cctalk)
        }
        if let mdb = try table.table("mdb") {
            s.mdb = try MDBScenario.parse(mdb)
        }
        if let alloy = try table.table("alloy") {
            s.alloy = try AlloySensorSettings.parse(alloy)
        }
        return s
    }

    static func positive(_ table: SettingsTable, _ key: String, max: Double) throws(SettingsError) -> Double? {
        guard let value = try table.double(key) else { return nil }
        guard value > 0, value <= max else { throw table.error(key, "must be above 0 and at most \(max)") }
        return value
    }

    static func fraction(_ table: SettingsTable, _ key: String) throws(SettingsError) -> Double? {
        guard let value = try table.double(key) else { return nil }
        guard (0...1).contains(value) else { throw table.error(key, "must be a fraction between 0 and 1") }
        return value
    }

    static func insertionNumbers(_ table: SettingsTable, _ key: String) throws(SettingsError) -> [Int] {
        guard let values = try table.doubles(key) else { return [] }
        guard values.allSatisfy({ $0 >= 1 && $0 <= 1e12 && $0 == $0.rounded() }) else {
            throw table.error(key, "must list insertion numbers (1 = the first coin, at most 10^12)")
        }
        return values.map { Int($0) }
    }

    static func parseNoise(_ table: SettingsTable, _ key: String) throws(SettingsError) -> Noise? {
        if let detailed = try? table.table(key) {
            try detailed.rejectUnknownKeys(["sigma", "absolute"])
            guard let sigma = try detailed.double("sigma"), sigma >= 0 else { throw detailed.error("sigma", "is required and must not be negative") }
            return Noise(sigma: sigma, absolute: try detailed.bool("absolute") ?? false)
        }
        guard let sigma = try table.double(key) else { return nil }
        guard (0...0.5).contains(sigma) else { throw table.error(key, "relative σ must be between 0 and 0.5") }
        return Noise(sigma: sigma)
    }

    static func stem(_ path: String) -> String {
        var name = String(path.split(separator: "/").last ?? "scenario")
        for suffix in [".yaml", ".yml"] where name.hasSuffix(suffix) { name.removeLast(suffix.count) }
        return name
    }
}
