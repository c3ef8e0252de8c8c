/// What a `$CMS` sentence reports.
public enum MechStatus: String, Sendable, Hashable, CaseIterable {
    /// The mech (re)started; its device sequence numbers start again at 1. Detail: its boot number.
    case powerUp = "POWERUP"
    /// The answer to `$CMH`: detail is the mech's current boot number.
    case session = "SESSION"
    case ok = "OK"
    case jam = "JAM"
    case tamper = "TAMPER"
    /// The mech measures the alloy axis: detail is its sensor's two frequencies, `<low_hz>/<high_hz>`.
    case alloy = "ALLOY"
}
