import CoinMechCCTalk
import CoinMechModel

/// A mech that takes coins itself and reports them in batches (a ccTalk acceptor, an MDB
/// changer): no reading waits for an answer. The deciding loop records each batch in one
/// transaction with the device's counter row, then tells the mech how that went before it
/// calls it again: nothing (stored), `notRecorded` or `rewind`.
public protocol AcceptorMech: Mech {
    /// What the engine reported since the last call, oldest first. At most one of them is a
    /// batch, which must be settled before the mech is called again.
    func takeReports() -> [AcceptorReport]
    /// Takes coins of these positions, those of them whose coin ids are `creditable` (the
    /// chain credits them): the device returns a coin of any other.
    func allow(_ positions: CoinPositionMask, creditable: Set<String>?)
    /// The ledger could not store the batch last reported: the device is held inhibited and
    /// the batch offered again.
    func notRecorded()
    /// The ledger's counter row is not where the batch started (it was applied before, or
    /// another writer moved it): go on from the row.
    func rewind(to counter: AcceptorCounter?)
    /// What it says of itself for `status`: the parts its kind has.
    var deviceStatus: DeviceStatus { get }
}

/// One thing an acceptor's engine reported: what the money rules act on (nil for what only
/// logs and status show), and the line the log gives it.
public struct AcceptorReport: Sendable {
    public enum Level: Sendable {
        case debug, notice, warning, critical
    }

    public var event: AcceptorEvent?
    public var level: Level
    public var message: String

    public init(event: AcceptorEvent?, level: Level, message: String) {
        self.event = event
        self.level = level
        self.message = message
    }
}
