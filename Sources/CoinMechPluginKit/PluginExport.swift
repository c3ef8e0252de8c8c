import CoinMechPluginABI

/// Turns a `SwiftValidator` into the C ABI. A Swift plugin's whole entry point is:
///
///     @_cdecl("coinmech_plugin_entry")
///     public func coinmechPluginEntry(_ hostABI: UInt32, _ plugin: UnsafeMutablePointer<coinmech_plugin>?) -> Int32 {
///         PluginExport.fill(
///             plugin, hostABI: hostABI, name: "coin", version: "2.0.0", license: "MIT",
///             description: "accepts one denomination inside its window",
///             create: { PluginExport.create(CoinValidator.self, $0, $1, $2, $3) },
///             validate: { PluginExport.validate(CoinValidator.self, $0, $1, $2) })
///     }
///
/// The closures name the concrete type, so the validate call is dispatched statically.
public enum PluginExport {
    public typealias CreateFunction = @convention(c) (
        UnsafePointer<coinmech_host>?, UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int
    ) -> UnsafeMutableRawPointer?
    public typealias ValidateFunction = @convention(c) (
        UnsafeMutableRawPointer?, UnsafePointer<coinmech_reading>?, UnsafeMutablePointer<coinmech_decision>?
    ) -> Void
    public typealias ExplainFunction = @convention(c) (
        UnsafeMutableRawPointer?, UnsafePointer<coinmech_reading>?, UnsafeMutablePointer<CChar>?, Int
    ) -> Int

    /// Fills the host's plugin struct (never past the size the host gave); returns non-zero when
    /// the host speaks another major ABI version. `kinds` are the reading kinds the plugin handles
    /// (`COINMECH_KINDS_*`); `concurrentInstances` promises that distinct instances may decide at
    /// the same time on different threads (true when instances share no mutable state).
    public static func fill(
        _ plugin: UnsafeMutablePointer<coinmech_plugin>?, hostABI: UInt32, name: StaticString, version: StaticString,
        license: StaticString, description: StaticString, kinds: UInt32 = COINMECH_KINDS_MEASURED,
        concurrentInstances: Bool = true, create: CreateFunction, validate: ValidateFunction, explain: ExplainFunction? = nil
    ) -> Int32 {
        guard let plugin else { return -1 }
        var mine = coinmech_plugin()
        mine.abi_version = COINMECH_PLUGIN_ABI_VERSION
        mine.size = UInt32(MemoryLayout<coinmech_plugin>.size)
        mine.name = cString(name)
        mine.version = cString(version)
        mine.license = cString(license)
        mine.description = cString(description)
        mine.reading_kinds = kinds
        mine.flags = concurrentInstances ? UInt32(COINMECH_PLUGIN_CONCURRENT_INSTANCES) : 0
        mine.create = create
        mine.validate = validate
        mine.destroy = { context in
            guard let context else { return }
            Unmanaged<AnyObject>.fromOpaque(context).release()
        }
        mine.describe = { context, buffer, size in
            guard let context else { return 0 }
            let text = (Unmanaged<AnyObject>.fromOpaque(context).takeUnretainedValue() as! any SwiftValidator).describe()
            return PluginExport.copy(text, to: buffer, size: size)
        }
        mine.explain = explain
        return coinmech_plugin_offer(hostABI, plugin, &mine)
    }

    private static func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// Creates a `V` from the JSON the host passed; on error writes the message and returns nil.
    public static func create<V: SwiftValidator>(
        _ type: V.Type, _ host: UnsafePointer<coinmech_host>?, _ json: UnsafePointer<CChar>?,
        _ errorBuffer: UnsafeMutablePointer<CChar>?, _ errorSize: Int
    ) -> UnsafeMutableRawPointer? {
        let config = json.map { String(cString: $0) } ?? "{}"
        do throws(PluginConfigError) {
            let validator = try V(configJSON: config.isEmpty ? "{}" : config, host: PluginHost(host))
            return Unmanaged.passRetained(validator).toOpaque()
        } catch let configError {
            _ = copy(configError.message, to: errorBuffer, size: errorSize)
            return nil
        }
    }

    /// Decides one reading on a `V` instance, dispatched statically.
    @inlinable @inline(__always)
    public static func validate<V: SwiftValidator>(
        _ type: V.Type, _ context: UnsafeMutableRawPointer?, _ reading: UnsafePointer<coinmech_reading>?,
        _ decision: UnsafeMutablePointer<coinmech_decision>?
    ) {
        guard let context, let reading, let decision else { return }
        // +0 access: the host owns the instance for the duration of the call.
        Unmanaged<V>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.validate(ReadingView(reading), decision) }
    }

    /// The optional `explain` function for a `V` instance: pass
    /// `explain: { PluginExport.explain(CoinTableValidator.self, $0, $1, $2, $3) }` to `fill`.
    public static func explain<V: SwiftValidator>(
        _ type: V.Type, _ context: UnsafeMutableRawPointer?, _ reading: UnsafePointer<coinmech_reading>?,
        _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int
    ) -> Int {
        guard let context, let reading else { return copy("{}", to: buffer, size: size) }
        let text = Unmanaged<V>.fromOpaque(context).takeUnretainedValue().explain(ReadingView(reading)) ?? "{}"
        return copy(text, to: buffer, size: size)
    }

    /// Copies `text` NUL-terminated into a C buffer; returns the length it needed.
    static func copy(_ text: String, to buffer: UnsafeMutablePointer<CChar>?, size: Int) -> Int {
        let utf8 = Array(text.utf8)
        guard let buffer, size > 0 else { return utf8.count }
        let count = min(utf8.count, size - 1)
        utf8.withUnsafeBufferPointer { source in
            UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress!, byteCount: count)
        }
        buffer[count] = 0
        return utf8.count
    }
}
