import CoinMechChain
import CoinMechPluginABI

/// One instance a plugin created, owned by reference counting: when the last chain that
/// holds it is gone, `destroy` runs. The image it came from stays mapped.
public final class PluginInstance: Validator, @unchecked Sendable {
    // @unchecked: all stored properties are set once; the plugin's own state behind `context`
    // is touched only through the calls the threading contract allows.
    public let image: PluginImage
    private let context: UnsafeMutableRawPointer
    public let call: ValidatorCall
    /// What the instance was given at create; freed after destroy.
    let services: HostServices
    let site: PluginBreadcrumb.Site?

    init(image: PluginImage, context: UnsafeMutableRawPointer, services: HostServices, site: PluginBreadcrumb.Site?) {
        self.image = image
        self.context = context
        self.services = services
        self.site = site
        call = ValidatorCall(function: image.api.validate!, context: context)
    }

    deinit {
        PluginBreadcrumb.around(site, phase: .destroy) { image.api.destroy!(context) }
    }

    /// The instance's self-description (JSON text), if the plugin provides `describe`.
    public var describe: String? {
        guard let describe = image.api.describe else { return nil }
        return PluginBreadcrumb.around(site, phase: .describe) { Self.text { describe(context, $0, $1) } }
    }

    /// How the instance judges `reading` (JSON text), if its plugin provides `explain`. For
    /// operators, never for the deciding path; like `validate`, not to be called while another
    /// thread decides on this instance.
    public func explain(_ reading: Reading) -> String? {
        guard let explain = image.api.explain else { return nil }
        return reading.withCReading { raw in
            PluginBreadcrumb.around(site, phase: .describe) { Self.text { explain(context, raw, $0, $1) } }
        }
    }

    /// A JSON text written by a describe-like function: asked again with more room if it did not fit.
    static func text(_ write: (UnsafeMutablePointer<CChar>, Int) -> Int) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let needed = buffer.withUnsafeMutableBufferPointer { write($0.baseAddress!, $0.count) }
        if needed >= buffer.count {
            buffer = [CChar](repeating: 0, count: needed + 1)
            _ = buffer.withUnsafeMutableBufferPointer { write($0.baseAddress!, $0.count) }
        }
        buffer[buffer.count - 1] = 0
        return String(nulTerminated: buffer)
    }

    /// A chain link around this instance.
    public func link(named name: String, policy: LinkPolicy = LinkPolicy(), health: LinkHealth = LinkHealth()) -> ChainLink {
        ChainLink(name: name, origin: LinkOrigin(metadata: image.metadata, sha256: image.sha256, loadedAt: image.loadedAt, description: describe),
                  validator: self, policy: policy, health: health)
    }
}
