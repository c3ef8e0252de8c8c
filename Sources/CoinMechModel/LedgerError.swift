/// A ledger failure. While the ledger cannot write, the daemon accepts no coin.
public enum LedgerError: Error, Sendable, Equatable, CustomStringConvertible {
    case open(path: String, message: String)
    /// The disk or the database size limit is full.
    case full(message: String)
    /// Another connection held the write lock past the time this write could wait (what was
    /// left of the mech's deadline): nothing was written, the disk is fine.
    case busy(message: String)
    case write(message: String)
    case read(message: String)
    /// What the write depended on had changed (another writer, or the same batch applied
    /// before): nothing was written.
    case precondition(String)

    public var description: String {
        switch self {
        case .open(let path, let message): "ledger \(path): cannot open: \(message)"
        case .full(let message): "ledger full: \(message)"
        case .busy(let message): "ledger busy (another writer holds it): \(message)"
        case .write(let message): "ledger write failed: \(message)"
        case .read(let message): "ledger read failed: \(message)"
        case .precondition(let message): "ledger changed under the write, nothing written: \(message)"
        }
    }
}
