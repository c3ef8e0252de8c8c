import CoinFacts
import CoinMechCore
import CoinMechDrivers
import CoinMechHotplug
import CoinMechModel

/// Where readings come from, as the configuration's `source` table says (docs/CONFIG.md): the
/// mech, configured by its kind's driver (`MechDrivers.table`), and what every kind shares.
public struct SourceConfiguration: Sendable, Equatable {
    /// Name recorded in the ledger with each reading.
    public var name: String
    /// Its `source.kind`: the driver of the mech.
    public var kind: String
    /// The mech as its driver reads it.
    public var mech: any MechSettings
    /// The mech's answer deadline (serial: 50 ms unless set; other kinds: none unless set).
    public var answerDeadline: AnswerDeadline?
    /// The coins this cabinet takes (`currencies`, `tokens`): no accept outside them is credited.
    public var coins: CabinetCoins = .allMint
    /// Whether `currencies` was configured (else every mint currency is taken, with a warning).
    public var currenciesConfigured = false
    /// What becomes of credit left standing (`standing_credit`).
    public var standingCredit: StandingCredit = .keep

    public init(name: String, kind: String, mech: any MechSettings, answerDeadline: AnswerDeadline? = nil) {
        self.name = name
        self.kind = kind
        self.mech = mech
        self.answerDeadline = answerDeadline
    }

    /// Where the mech is, for status.
    public var device: String { mech.device }
    /// Which udev device is the mech (nil: none to follow).
    public var hotplug: DeviceMatch? { mech.hotplug }
    /// How long the mech takes at most to confirm an accepted coin.
    public var confirmationWindow: Duration { mech.confirmationWindow }

    public static func == (a: Self, b: Self) -> Bool {
        a.name == b.name && a.kind == b.kind && a.mech.isSame(as: b.mech) && a.answerDeadline == b.answerDeadline && a.coins == b.coins
            && a.currenciesConfigured == b.currenciesConfigured && a.standingCredit == b.standingCredit
    }
}
