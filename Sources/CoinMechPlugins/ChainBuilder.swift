import CoinMechChain

/// One link as configuration describes it: which plugin, under what name, with what settings.
public struct LinkSpec: Sendable, Hashable {
    /// The link's name in decisions and statistics (unique within a chain).
    public var name: String
    /// Plugin name, looked up in the plugin directory.
    public var plugin: String
    /// The link's own configuration as a JSON object.
    public var configJSON: String

    public init(name: String? = nil, plugin: String, configJSON: String = "{}") {
        self.name = name ?? plugin
        self.plugin = plugin
        self.configJSON = configJSON
    }
}

/// Why a chain could not be built; names the link by position and name.
public struct ChainBuildError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 1-based position of the failing link, or 0 for errors about the whole chain.
    public var position: Int
    public var link: String
    public var cause: Cause

    public enum Cause: Sendable, Equatable {
        case plugin(PluginLoadError)
        case duplicateName
        /// The name is one the host gives its own decisions ("source", "inhibit", "deadline", …).
        case reservedName
        case empty
    }

    public init(position: Int, link: String, cause: Cause) {
        self.position = position
        self.link = link
        self.cause = cause
    }

    public var description: String {
        switch cause {
        case .plugin(let error): "chain link \(position) '\(link)': \(error)"
        case .duplicateName: "chain link \(position) '\(link)': another link already has this name"
        case .reservedName:
            "chain link \(position) '\(link)': the host names its own decisions so (reserved: \(Chain.reservedLinkNames.sorted().joined(separator: ", "))); give the link another name"
        case .empty: "the chain has no links: every coin would be rejected"
        }
    }
}

/// Builds a complete chain off to the side: every link loaded and created, or an error and nothing.
public struct ChainBuilder: Sendable {
    public let loader: PluginLoader

    public init(loader: PluginLoader) { self.loader = loader }

    /// Loads and instantiates every link in order; the result is ready to swap in.
    /// Warnings the plugins report (e.g. overlapping windows) go to `warn`.
    public func build(generation: UInt64, links specs: [LinkSpec], warn: (String) -> Void = { _ in }) throws(ChainBuildError) -> Chain {
        guard !specs.isEmpty else { throw ChainBuildError(position: 0, link: "", cause: .empty) }
        var links: [ChainLink] = []
        var names: Set<String> = []
        for (offset, spec) in specs.enumerated() {
            let position = offset + 1
            guard !Chain.reservedLinkNames.contains(spec.name) else {
                throw ChainBuildError(position: position, link: spec.name, cause: .reservedName)
            }
            guard names.insert(spec.name).inserted else {
                throw ChainBuildError(position: position, link: spec.name, cause: .duplicateName)
            }
            do throws(PluginLoadError) {
                let image = try loader.load(plugin: spec.plugin)
                let link = try image.instantiate(configJSON: spec.configJSON).link(named: spec.name)
                for warning in PluginDescription.warnings(in: link.origin.description) {
                    warn("chain link \(position) '\(spec.name)': \(warning)")
                }
                links.append(link)
            } catch {
                throw ChainBuildError(position: position, link: spec.name, cause: .plugin(error))
            }
        }
        return Chain(generation: generation, links: links)
    }
}
