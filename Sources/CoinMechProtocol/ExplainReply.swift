/// `explain`: how each link of the running chain would judge a reading, in the links' own words.
/// Nothing was decided or recorded.
public struct ExplainReply: OperatorReply {
    /// What one link said, or why it was not asked.
    public enum Answer: Sendable, Equatable {
        /// The object the plugin's `explain` wrote, as it wrote it: plugin text, so read leniently
        /// (`decision`, `lines`), never refused.
        case explained(JSON)
        /// Not asked: the link is out of service, runs isolated, or its plugin cannot explain.
        case notAsked(String)

        /// The verdict the plugin named, if it named one.
        public var decision: String? {
            if case .explained(let details) = self { details["decision"]?.string } else { nil }
        }

        /// The plugin's lines of explanation (what is not text among them is left out).
        public var lines: [String] {
            if case .explained(let details) = self { (details["lines"]?.array ?? []).compactMap(\.string) } else { [] }
        }
    }

    public struct Link: Sendable, Equatable {
        public var name: String
        public var plugin: String
        public var version: String
        public var answer: Answer

        public init(name: String, plugin: String, version: String, answer: Answer) {
            self.name = name
            self.plugin = plugin
            self.version = version
            self.answer = answer
        }
    }

    public var diameter: Double
    public var weight: Double?
    public var thickness: Double?
    public var generation: Int64
    public var links: [Link]

    public init(diameter: Double, weight: Double?, thickness: Double?, generation: Int64, links: [Link]) {
        self.diameter = diameter
        self.weight = weight
        self.thickness = thickness
        self.generation = generation
        self.links = links
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "explain")
        let reading = try ReplyFields(try f.object("reading"), "explain reading")
        var links: [Link] = []
        for entry in try f.array("links") {
            let l = try ReplyFields(entry, "explain link")
            let answer: Answer
            if let why = try l.optionalString("not_asked") {
                answer = .notAsked(why)
            } else {
                answer = .explained(try l.object("explanation"))
            }
            links.append(Link(name: try l.string("name"), plugin: try l.string("plugin"), version: try l.string("version"), answer: answer))
        }
        self.init(diameter: try reading.double("diameter"), weight: try reading.optionalDouble("weight"),
                  thickness: try reading.optionalDouble("thickness"), generation: try f.int("generation"), links: links)
    }

    public var json: JSON {
        var figures: [String: JSON] = ["diameter": .double(diameter)]
        figures["weight"] = weight.map(JSON.double)
        figures["thickness"] = thickness.map(JSON.double)
        let links: [JSON] = links.map { link in
            var entry: [String: JSON] = ["name": .string(link.name), "plugin": .string(link.plugin), "version": .string(link.version)]
            switch link.answer {
            case .explained(let details): entry["explanation"] = details
            case .notAsked(let why): entry["not_asked"] = .string(why)
            }
            return .object(entry)
        }
        return ["reading": .object(figures), "generation": .int(generation), "links": .array(links)]
    }
}
