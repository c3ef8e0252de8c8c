import CoinMechPluginABI

/// One validator instance: the code behind a link.
///
/// Plugin instances implement it by calling through the C ABI. The chain never calls
/// `validate` on one instance from two threads at once.
public protocol Validator: AnyObject, Sendable {
    /// Decide one reading by writing into `decision` (zeroed, verdict PASS, on entry).
    func validate(_ reading: UnsafePointer<coinmech_reading>, _ decision: UnsafeMutablePointer<coinmech_decision>)
}
