/// The plugins this project builds, tests with `coinmech-pluginval` at the highest strictness
/// and installs. With `plugins: {isolation: auto}` (the default) they run in the daemon's
/// process; any other plugin runs in a plugin host of its own.
public enum ShippedPlugins {
    public static let names: Set<String> = ["coin", "coin-table", "sanity", "repeat-guard", "weight-floor", "channel-map", "coin-id"]
}
