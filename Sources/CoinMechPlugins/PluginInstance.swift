import CoinMechChain
import CoinMechPluginABI

/// One instance a plugin created, owned by reference counting: when the last chain that
/// holds it is gone, `destroy` runs. The image it came from stays mapped.
public final class PluginInstance: Validator, @unchecked Sendable {
    public let image: PluginImage
    private let context: UnsafeMutableRawPointer
    public let call: ValidatorCall

    init(image: PluginImage, context: UnsafeMutableRawPointer) {
        self.image = image
        self.context = context
        call = ValidatorCall(function: image.api.validate!, context: context)
    }

    deinit {
        image.api.destroy!(context)
    }

    /// The instance's self-description (JSON text), if the plugin provides `describe`.
    public var describe: String? {
        guard let describe = image.api.describe else { return nil }
        var buffer = [CChar](repeating: 0, count: 4096)
        let needed = describe(context, &buffer, buffer.count)
        if needed >= buffer.count {
            buffer = [CChar](repeating: 0, count: needed + 1)
            _ = describe(context, &buffer, buffer.count)
        }
        buffer[buffer.count - 1] = 0
        return String(nulTerminated: buffer)
    }

    /// A chain link around this instance.
    public func link(named name: String) -> ChainLink {
        ChainLink(name: name, origin: image.origin(description: describe), validator: self)
    }
}
