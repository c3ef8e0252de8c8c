/// A credit move as the ledger holds it: the move, its event, and the balance it left.
public struct CreditMoveRecord: Sendable, Hashable {
    public var move: CreditMove
    public var seq: Int64
    public var balanceAfterMinor: Int64

    public init(move: CreditMove, seq: Int64, balanceAfterMinor: Int64) {
        self.move = move
        self.seq = seq
        self.balanceAfterMinor = balanceAfterMinor
    }
}
