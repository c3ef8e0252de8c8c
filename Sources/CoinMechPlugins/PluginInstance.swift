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

    /// How the instance judges `reading` (JSON text), if its plugin exports the optional explain
    /// symbol. For operators, never for the deciding path; like `validate`, not to be called
    /// while another thread decides on this instance.
    public func explain(_ reading: Reading) -> String? {
        guard let explain = image.explain else { return nil }
        var raw = coinmech_reading()
        raw.size = UInt32(MemoryLayout<coinmech_reading>.size)
        raw.device_seq = reading.deviceSeq
        raw.timestamp_ns = reading.timestampNanoseconds
        for (flag, value, field) in [
            (COINMECH_READING_HAS_DIAMETER, reading.diameterMM, \coinmech_reading.diameter_mm),
            (COINMECH_READING_HAS_WEIGHT, reading.weightG, \coinmech_reading.weight_g),
            (COINMECH_READING_HAS_THICKNESS, reading.thicknessMM, \coinmech_reading.thickness_mm),
        ] {
            guard let value else { continue }
            raw.flags |= UInt32(flag)
            raw[keyPath: field] = value
        }
        if let channel = reading.channel {
            raw.flags |= UInt32(COINMECH_READING_HAS_CHANNEL)
            raw.channel = channel
        }
        return reading.source.withCString { source in
            raw.source = source
            var buffer = [CChar](repeating: 0, count: 4096)
            let needed = explain(context, &raw, &buffer, buffer.count)
            if needed >= buffer.count {
                buffer = [CChar](repeating: 0, count: needed + 1)
                _ = explain(context, &raw, &buffer, buffer.count)
            }
            buffer[buffer.count - 1] = 0
            return String(nulTerminated: buffer)
        }
    }

    /// A chain link around this instance.
    public func link(named name: String) -> ChainLink {
        ChainLink(name: name, origin: image.origin(description: describe), validator: self)
    }
}
