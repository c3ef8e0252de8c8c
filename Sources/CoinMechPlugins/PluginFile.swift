/// A plugin file that passed the trust and format checks and has its private,
/// content-addressed copy: ready to be opened, here or in a plugin host.
public struct PluginFile: Sendable, Hashable {
    /// The file the operator installed.
    public var sourcePath: String
    /// The private copy to load.
    public var copyPath: String
    public var sha256: String
    /// It links the Swift runtime, so it is never unloaded.
    public var usesSwift: Bool

    public init(sourcePath: String, copyPath: String, sha256: String, usesSwift: Bool) {
        self.sourcePath = sourcePath
        self.copyPath = copyPath
        self.sha256 = sha256
        self.usesSwift = usesSwift
    }
}
