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

    var reply: ExplainReply {
        let links: [ExplainReply.Link] = chain.links.map { link in
            let answer: ExplainReply.Answer
            if let problem = link.health.problem {
                answer = .notAsked("the link is \(problem.state)")
            } else if let instance = link.validator as? PluginInstance {
                switch instance.explain(reading).map({ JSON.parse($0) }) {
                case nil: answer = .notAsked("its plugin has no explain function")
                case .some(.some(let details)) where details.object != nil: answer = .explained(details)
                case .some: answer = .notAsked("its plugin's explanation is not a JSON object")
                }
            } else {
                answer = .notAsked("it runs isolated, in a plugin host of its own")
            }
            return ExplainReply.Link(name: link.name, plugin: link.origin.plugin, version: link.origin.version, answer: answer)
        }
        return ExplainReply(diameter: reading.diameterMM ?? 0, weight: reading.weightG, thickness: reading.thicknessMM,
                            generation: Int64(chain.generation), links: links)
    }

    var json: JSON { reply.json }
}
