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
    // @unchecked: every stored property is set once in init; `api` holds C function pointers
    // and static strings of the mapped image, which stays mapped while this object lives.
    public let file: PluginFile
    /// What the plugin says about itself (copied).
    public let metadata: PluginMetadata
    /// Seconds since 1970 when it was loaded.
    public let loadedAt: Double
    let api: coinmech_plugin
    private let handle: UnsafeMutableRawPointer

    init(file: PluginFile, api: coinmech_plugin, metadata: PluginMetadata, handle: UnsafeMutableRawPointer) {
        self.file = file
        self.api = api
        self.metadata = metadata
        self.handle = handle
        loadedAt = LinkHealth.wallClock()
    }

    deinit {
        if unloadable { dlclose(handle) }
    }

    /// The file the operator installed.
    public var sourcePath: String { file.sourcePath }
    /// The private, content-addressed copy that was actually loaded.
    public var loadedPath: String { file.copyPath }
    public var sha256: String { file.sha256 }
    public var name: String { metadata.name }
    public var version: String { metadata.version }
    /// True for plain C images, which are closed on release.
    public var unloadable: Bool { !file.usesSwift }

    /// Creates one instance with the link's JSON configuration ("{}" when it has none), giving it
    /// the host's services under `instanceName`. `site` marks the calls in the breadcrumb.
    public func instantiate(configJSON: String, instanceName: String = "", log: @escaping PluginLogSink = PluginLog.standardError,
                            site: PluginBreadcrumb.Site? = nil) throws(PluginLoadError) -> PluginInstance {
        let services = HostServices(instanceName: instanceName.isEmpty ? name : instanceName, sink: log)
        var error = [CChar](repeating: 0, count: 1024)
        let context = PluginBreadcrumb.around(site, phase: .create) {
            configJSON.withCString { json in api.create!(services.pointer, json, &error, error.count) }
        }
        guard let context else {
            error[error.count - 1] = 0
            let message = String(nulTerminated: error)
            throw .createFailed(path: sourcePath, plugin: name, message: message.isEmpty ? "no message given" : message)
        }
        return PluginInstance(image: self, context: context, services: services, site: site)
    }
}
