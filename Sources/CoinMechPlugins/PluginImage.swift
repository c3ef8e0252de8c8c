import CoinMechChain
import CoinMechPluginABI

#if canImport(Glibc)
import Glibc
#endif

/// A plugin file mapped into the process, with the functions its entry filled in.
///
/// Immutable after loading. A Swift image stays mapped for the life of the process; a plain
/// C image is closed when this object (held by every instance made from it) goes away.
public final class PluginImage: @unchecked Sendable {
    /// The file the operator installed.
    public let sourcePath: String
    /// The private, content-addressed copy that was actually loaded.
    public let loadedPath: String
    public let sha256: String
    /// Plugin name and version as the plugin reports them (copied).
    public let name: String
    public let version: String
    /// Seconds since 1970 when it was loaded.
    public let loadedAt: Double
    let api: coinmech_plugin
    /// The optional `COINMECH_PLUGIN_EXPLAIN_SYMBOL`, if the image exports it.
    let explain: coinmech_plugin_explain_fn?
    private let handle: UnsafeMutableRawPointer
    /// True for plain C images, which are closed on release.
    public let unloadable: Bool

    init(sourcePath: String, loadedPath: String, sha256: String, api: coinmech_plugin, handle: UnsafeMutableRawPointer, unloadable: Bool) {
        self.handle = handle
        self.unloadable = unloadable
        self.sourcePath = sourcePath
        self.loadedPath = loadedPath
        self.sha256 = sha256
        self.api = api
        explain = dlsym(handle, COINMECH_PLUGIN_EXPLAIN_SYMBOL).map { unsafeBitCast($0, to: coinmech_plugin_explain_fn.self) }
        name = String(cString: api.name!)
        version = String(cString: api.version!)
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        loadedAt = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    deinit {
        if unloadable { dlclose(handle) }
    }

    /// Creates one instance with the link's JSON configuration ("{}" when it has none).
    public func instantiate(configJSON: String) throws(PluginLoadError) -> PluginInstance {
        var error = [CChar](repeating: 0, count: 1024)
        let context = configJSON.withCString { json in api.create!(json, &error, error.count) }
        guard let context else {
            error[error.count - 1] = 0
            let message = String(nulTerminated: error)
            throw .createFailed(path: sourcePath, plugin: name, message: message.isEmpty ? "no message given" : message)
        }
        return PluginInstance(image: self, context: context)
    }

    /// The origin record for a link built from this image.
    func origin(description: String?) -> LinkOrigin {
        LinkOrigin(plugin: name, version: version, sha256: sha256, loadedAt: loadedAt, description: description)
    }
}
