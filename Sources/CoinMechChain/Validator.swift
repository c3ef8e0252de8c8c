import CoinMechPluginABI

/// The C function a link's decisions go through, with the instance it is called on.
public struct ValidatorCall: Sendable {
    public typealias Function = @convention(c) (
        UnsafeMutableRawPointer?, UnsafePointer<coinmech_reading>?, UnsafeMutablePointer<coinmech_decision>?
    ) -> Void

    public let function: Function
    /// Opaque instance pointer; valid while the validator that handed it out is alive.
    public nonisolated(unsafe) let context: UnsafeMutableRawPointer?

    public init(function: Function, context: UnsafeMutableRawPointer?) {
        self.function = function
        self.context = context
    }
}

/// One validator instance: the code behind a link, reached through the plugin C ABI.
///
/// The chain keeps the validator alive and calls `call.function(call.context, …)` directly,
/// so deciding costs no reference counting. The chain never calls one instance from two
/// threads at once.
public protocol Validator: AnyObject, Sendable {
    var call: ValidatorCall { get }
}
