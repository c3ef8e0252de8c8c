import CoinMechMDB
import CoinMechModel
import Foundation

/// An MDB changer as the payout core sees it, read off its host (`MDBChangerHost`) and the
/// host's events, with no I/O: what it pays, whether it is held still, its tube counts, who it
/// is, and its DISPENSEs counted. `MDBMech` keeps one beside its host; the payout rig drives the
/// same against coinsim's changer.
public struct MDBChangerPayer: Sendable {
    /// Tube counts taken since the start (TUBE STATUS, a setup's count).
    public private(set) var tubeReads: UInt64 = 0
    private var dispensed: [DispenseCount] = []
    /// A payout was counted from the setup's tube read (a reset or an outage came between):
    /// the `.ready` that follows carries that same read, which is no fresh count. Taken for
    /// one, a count short by a lagging sensor was "counted again" from the same numbers and
    /// believed (found by the crash suite: a value payout cut by a reset, seed 7).
    private var countedFromSetupRead = false

    public init() {}

    /// Takes note of what the host reported.
    public mutating func take(_ event: MDBChangerHostEvent) {
        switch event {
        case .ready(_, _, let current):
            if current != nil && !countedFromSetupRead { tubeReads += 1 }
            countedFromSetupRead = false
        case .tubes:
            tubeReads += 1
            countedFromSetupRead = false
        case .dispensed(let dispense):
            countedFromSetupRead = dispense.countedAtSetup
            dispensed.append(DispenseCount(type: dispense.type, count: dispense.count, tubes: dispense.tubes.counts, jammed: dispense.jammed,
                                           uncertain: dispense.disturbed || dispense.timedOut))
        case .paidValue(let payout):
            countedFromSetupRead = payout.countedAtSetup
            // Its tubes' fall is what it paid; its PAYOUT STATUS is checked against that fall.
            dispensed.append(DispenseCount(type: PayoutStep.anyType, count: 1, tubes: payout.tubes.counts, jammed: payout.jammed,
                                           uncertain: payout.disturbed || payout.timedOut, deviceCounts: payout.status?.counts))
        default:
            break
        }
    }

    /// DISPENSEs counted since the last call, oldest first.
    public mutating func takeDispensed() -> [DispenseCount] {
        defer { dispensed.removeAll() }
        return dispensed
    }

    /// What the changer says of itself now; `connected`: its line is open.
    public func state(of host: MDBChangerHost, connected: Bool) -> PayingDeviceState {
        var state = PayingDeviceState()
        state.coins = Self.coins(of: host)
        state.heldStill = connected && host.isRunning && host.isStill && !host.isDispensing
        state.countReads = tubeReads
        if tubeReads > 0, let tubes = host.tubes {
            state.units = tubes.counts
            state.unitsReported = tubes.reported
        }
        state.identity = Self.identity(of: host)
        if host.paysValue, let setup = host.setup { state.valueStepMaximum = 255 * Int64(setup.scalingFactor) }
        return state
    }

    /// `valueMinor` in the changer's scaled units (PAYOUT's one byte), if it is a whole number
    /// of them from 1 to 255.
    public static func scaled(_ valueMinor: Int64, _ host: MDBChangerHost) -> Int? {
        guard let setup = host.setup, setup.scalingFactor > 0 else { return nil }
        let unit = Int64(setup.scalingFactor)
        guard valueMinor % unit == 0, (1...255).contains(valueMinor / unit) else { return nil }
        return Int(valueMinor / unit)
    }

    /// Its tubes, counted with it held: their fall since each step is what it paid.
    public func account(of host: MDBChangerHost) -> PayoutRestartAccount {
        guard tubeReads > 0, let tubes = host.tubes else { return .wait }
        return .tubes(tubes.counts, reported: tubes.reported)
    }

    /// The coins its setup gives a value, by coin type, and their currency.
    static func coins(of host: MDBChangerHost) -> PayoutCoins? {
        guard let setup = host.setup, let currency = setup.currencyCode else { return nil }
        var coins: [Int: PayoutCoin] = [:]
        for (type, id) in setup.coinIDs {
            if let value = setup.valueMinor(ofType: type) { coins[type] = PayoutCoin(coinID: id, valueMinor: value) }
        }
        return PayoutCoins(currency: currency, coins: coins)
    }

    /// Who it is, as the payout journal records it (manufacturer and serial number, or its
    /// level, and its coin table): a payout left open is settled from the tubes only of the
    /// changer that paid it. Nil while not known: a level-3 changer names itself in its
    /// IDENTIFICATION reply, and one whose replies were lost (the host goes on without it) is a
    /// changer not identified, not another changer; its payouts left open settle from its tubes.
    static func identity(of host: MDBChangerHost) -> String? {
        guard let setup = host.setup else { return nil }
        guard host.identity != nil || setup.level < 3 else { return nil }
        let who = host.identity.map { "\($0.manufacturer.trimmingCharacters(in: .whitespaces)) \($0.serialNumber.trimmingCharacters(in: .whitespaces))" } ?? "level \(setup.level)"
        let coins = setup.coinIDs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        return "\(who); \(coins)"
    }
}
