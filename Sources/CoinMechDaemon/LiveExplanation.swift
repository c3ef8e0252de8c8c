import CoinMechChain
import CoinMechPlugins
import CoinMechProtocol

/// The `explain` command's answer: how each link of the running chain would judge a reading,
/// in the links' own words (their `explain`), with the state they have now — coin-table's drift
/// learnt from the coins this mech has credited, for instance.
///
/// Unlike `coinmechd --explain-reading`, which builds a fresh chain and asks every link for its
/// verdict, nothing here calls `validate`: the running instances keep state from real coins (the
/// drift, repeat-guard's recent readings) that a made-up reading must not change. The deciding
/// loop builds it between two readings, as a plugin's `explain` never runs while it validates.
/// Isolated links are not asked (their instance lives in another process), nor quarantined ones.
struct LiveExplanation {
    let reading: Reading
    let chain: Chain

    var json: JSON {
        var figures: [String: JSON] = ["diameter": .double(reading.diameterMM ?? 0)]
        figures["weight"] = reading.weightG.map(JSON.double)
        figures["thickness"] = reading.thicknessMM.map(JSON.double)
        let links: [JSON] = chain.links.map { link in
            var entry: [String: JSON] = ["name": .string(link.name), "plugin": .string(link.origin.plugin), "version": .string(link.origin.version)]
            if let problem = link.health.problem {
                entry["not_asked"] = .string("the link is \(problem.state)")
            } else if let instance = link.validator as? PluginInstance {
                if let text = instance.explain(reading), let details = JSON.parse(text) {
                    entry["explanation"] = details
                } else {
                    entry["not_asked"] = .string("its plugin has no explain function")
                }
            } else {
                entry["not_asked"] = .string("it runs isolated, in a plugin host of its own")
            }
            return .object(entry)
        }
        return ["reading": .object(figures), "generation": .int(Int64(chain.generation)), "links": .array(links)]
    }
}
