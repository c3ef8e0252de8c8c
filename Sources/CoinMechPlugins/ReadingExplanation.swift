import CoinMechChain
import Foundation

/// How every link of a chain judges one reading, for an operator who wants to know why a coin
/// was returned (`coinmechd --explain-reading`). Each link is asked once, in order; a plugin
/// that provides the optional explain function adds its own lines (coin-table: the normalised
/// distance to each nearby denomination).
public struct ReadingExplanation: Sendable {
    /// One link's answer.
    public struct Link: Sendable {
        public let position: Int
        public let name: String
        public let origin: LinkOrigin
        /// What this link answered on its own.
        public let verdict: LinkVerdict
        /// False for links after the one that decided: the chain would not have asked them.
        public let reached: Bool
        /// The plugin's own explanation ("lines" of its explain object), if it gives one.
        public let details: [String]
    }

    public let reading: Reading
    public let links: [Link]
    /// The chain's answer: the first link that accepted or rejected, else the terminal link.
    public let verdict: Verdict
    public let decidedBy: String

    /// Asks every link of `chain` about `reading`, once each (stateful links, such as the repeat
    /// guard, see it once). Not for a chain that is deciding readings meanwhile.
    public init(reading: Reading, chain: Chain) {
        self.reading = reading
        var links: [Link] = []
        var decided: (Verdict, String)?
        for (index, link) in chain.links.enumerated() {
            let alone = Chain(generation: chain.generation, links: [link], acceptPolicy: chain.acceptPolicy).decide(reading)
            let verdict: LinkVerdict = alone.linkName == Chain.terminalLinkName ? .pass : .decided(alone.verdict)
            let details = (link.validator as? PluginInstance)?.explain(reading).map(Self.lines) ?? []
            links.append(Link(position: index + 1, name: link.name, origin: link.origin, verdict: verdict, reached: decided == nil, details: details))
            if decided == nil, case .decided(let final) = verdict { decided = (final, link.name) }
        }
        self.links = links
        verdict = decided?.0 ?? .reject(Rejection(reason: Chain.terminalLinkName, message: "no link recognised the coin"))
        decidedBy = decided?.1 ?? Chain.terminalLinkName
    }

    /// A reading from figures as an operator types them: `DIAMETER,WEIGHT[,THICKNESS[,LOW,HIGH[,PERMEABILITY]]]`
    /// (mm, g, mm; the alloy axis: % IACS at the mech's low and high frequency, relative
    /// permeability). The thickness may be left empty before the alloy figures.
    public static func reading(figures text: String) -> Reading? {
        let fields = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard [2, 3, 5, 6].contains(fields.count) else { return nil }
        let parts = fields.enumerated().map { index, field in index == 2 && field.isEmpty && fields.count > 3 ? Double?.none : Double(field) }
        guard parts.enumerated().allSatisfy({ $0.element != nil || ($0.offset == 2 && fields[2].isEmpty) }) else { return nil }
        var reading = Reading(deviceSeq: 0, diameterMM: parts[0], weightG: parts[1], thicknessMM: parts.count >= 3 ? parts[2] : nil, source: "explain")
        if parts.count >= 5, let low = parts[3], let high = parts[4] {
            reading.alloy = Reading.Alloy(lowIACS: low, highIACS: high, permeability: parts.count == 6 ? parts[5] : nil)
        }
        return reading
    }

    /// For people: the reading, each link's answer with its details, and the decision.
    public var text: String {
        var figures = [("diameter", reading.diameterMM, "mm"), ("weight", reading.weightG, "g"), ("thickness", reading.thicknessMM, "mm")]
            .compactMap { name, value, unit in value.map { "\(name) \($0) \(unit)" } }
        if let alloy = reading.alloy {
            figures.append("conductivity \(alloy.lowIACS) / \(alloy.highIACS) % IACS")
            if let permeability = alloy.permeability { figures.append("permeability \(permeability)") }
        }
        var out = ["reading: " + figures.joined(separator: ", ")]
        for link in links {
            let answer: String
            switch link.verdict {
            case .pass: answer = "pass"
            case .decided(.accept(let denomination)): answer = "accept \(denomination)"
            case .decided(.reject(let rejection)): answer = "reject \(rejection)"
            }
            out.append("\(link.position) \(link.name) (\(link.origin.plugin) \(link.origin.version)): "
                + (link.reached ? answer : "not reached (on its own: \(answer))"))
            out += link.details.map { "    " + $0 }
        }
        switch verdict {
        case .accept(let denomination): out.append("decision: accept \(denomination) by \(decidedBy)")
        case .reject(let rejection): out.append("decision: reject (\(rejection.reason)) by \(decidedBy)")
        }
        return out.joined(separator: "\n")
    }

    static func lines(_ json: String) -> [String] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return [] }
        return object["lines"] as? [String] ?? []
    }
}
