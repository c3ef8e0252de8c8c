import CoinMechCCTalk
import CoinMechHotplug
import CoinMechModel
import CoinMechSettings
import CoinMechSources

/// One kind of mech, as gpsd's driver table has one entry per kind of receiver: the name of its
/// `source.kind`, the keys of its section and their parser, what it can do, and what coinsim
/// plays it. What it is configured with (`Settings`) makes the mech and says how its coins
/// become credit. Every kind is a row of `MechDrivers.table`.
public protocol MechDriver: Sendable {
    associatedtype Settings: MechSettings

    /// Its `source.kind`.
    static var kind: String { get }
    /// What a mech of this kind can do at most (its settings say what a configured one does).
    static var capabilities: MechCapabilities { get }
    /// How coinsim plays it, for the demo, the tests and CI.
    static var simulator: String { get }
    /// The keys of the `source` table this kind reads, besides those every kind has: its own
    /// and no other's (a key another kind reads is refused for this one, naming that kind).
    static var keys: [String] { get }
    /// The answer deadline when the configuration names none, in ms (nil: no deadline).
    static var defaultDeadlineMilliseconds: Double? { get }

    /// Reads its part of the `source` table; errors name the file, line and key.
    static func parse(_ source: SettingsTable, resolve: (String) -> String) throws(SettingsError) -> Settings
}

extension MechDriver {
    public static var defaultDeadlineMilliseconds: Double? { nil }
}

/// A configured mech of one kind: what the daemon needs of it, whatever its kind.
public protocol MechSettings: Sendable {
    /// Where the mech is, for status and logs.
    var device: String { get }
    /// Which udev device is the mech (nil: none to follow).
    var hotplug: DeviceMatch? { get }
    /// What this mech, as configured, can do.
    var capabilities: MechCapabilities { get }
    /// How an accept becomes credit.
    var credit: CreditRule { get }
    /// How long the mech takes at most to store or return an accepted coin.
    var confirmationWindow: Duration { get }
    /// The line its answers travel on, whose time counts against the deadline (nil: none).
    var lineTiming: LineTiming? { get }
    /// Why teach mode cannot teach it (nil: it can).
    var unteachable: String? { get }
    /// A mech that takes coins itself and reports them in batches (`AcceptorMech`): where its
    /// counter row is kept and what the operator lets it take; nil for the others.
    var acceptor: AcceptorSettings? { get }

    /// The mech, not yet connected.
    func make(_ context: MechContext) -> any Mech
    /// Whether `other` is the same kind configured the same way (a reload compares them).
    func isSame(as other: any MechSettings) -> Bool
}

extension MechSettings {
    public var hotplug: DeviceMatch? { nil }
    public var confirmationWindow: Duration { .seconds(1) }
    public var lineTiming: LineTiming? { nil }
    public var unteachable: String? { capabilities.contains(.teachable) ? nil : "this mech cannot be taught" }
    public var acceptor: AcceptorSettings? { nil }
}

/// What the deciding loop needs of a mech that takes coins itself: its bus address (the key of
/// its counter row on the ledger) and the coin positions the operator allows.
public struct AcceptorSettings: Sendable, Hashable {
    public var address: UInt8
    public var positions: CoinPositionMask

    public init(address: UInt8, positions: CoinPositionMask) {
        self.address = address
        self.positions = positions
    }
}

extension MechSettings where Self: Equatable {
    public func isSame(as other: any MechSettings) -> Bool { (other as? Self) == self }
}
