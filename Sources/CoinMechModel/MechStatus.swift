/// What a `$CMS` sentence reports.
public enum MechStatus: String, Sendable, Hashable, CaseIterable {
    /// The mech (re)started; its device sequence numbers start again at 1. Detail: its boot number.
    case powerUp = "POWERUP"
    /// The answer to `$CMH`: detail is the mech's current boot number.
    case session = "SESSION"
    case ok = "OK"
    case jam = "JAM"
    case tamper = "TAMPER"
}
