/// Every kind of mech the daemon drives, one row each (docs/ARCHITECTURE.md, "Adding a mech kind").
public enum MechDrivers {
    public static let table: [any MechDriver.Type] = [
        SerialDriver.self,
        GPIODriver.self,
        GPIOReplayDriver.self,
        CCTalkDriver.self,
        MDBDriver.self,
    ]

    /// The driver of `kind`, nil for a kind no row names.
    public static func driver(kind: String) -> (any MechDriver.Type)? {
        table.first { $0.kind == kind }
    }

    /// The kinds, in the table's order, for error messages.
    public static var kinds: [String] { table.map { $0.kind } }
}
