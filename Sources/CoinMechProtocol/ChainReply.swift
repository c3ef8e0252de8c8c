/// `chain`: the running chain, link by link, with what each plugin says of itself, how it runs,
/// its statistics since it was built and, when it is out of service, why.
public struct ChainReply: OperatorReply {
    /// A link's counts since its chain was built.
    public struct Statistics: Sendable, Equatable {
        public var calls: Int64
        public var accepts: Int64
        public var rejects: Int64
        public var passes: Int64
        public var meanNanoseconds: Double
        public var sampledCalls: Int64
        public var pluginErrors: Int64
        public var lies: Int64

        public init(calls: Int64, accepts: Int64, rejects: Int64, passes: Int64, meanNanoseconds: Double, sampledCalls: Int64,
                    pluginErrors: Int64, lies: Int64) {
            self.calls = calls
            self.accepts = accepts
            self.rejects = rejects
            self.passes = passes
            self.meanNanoseconds = meanNanoseconds
            self.sampledCalls = sampledCalls
            self.pluginErrors = pluginErrors
            self.lies = lies
        }
    }

    /// The sandbox of an isolated link's plugin host: the layers it holds and those it lacks.
    public struct Sandbox: Sendable, Equatable {
        public var layers: String
        public var landlockABI: Int64
        public var seccomp: Bool
        public var limits: Bool
        public var networkNamespace: Bool
        public var missing: [String]
        /// Whether a missing layer stops the host (`required`) or is only warned of.
        public var required: Bool
        public var memoryMiB: Int64

        public init(layers: String, landlockABI: Int64, seccomp: Bool, limits: Bool, networkNamespace: Bool, missing: [String], required: Bool,
                    memoryMiB: Int64) {
            self.layers = layers
            self.landlockABI = landlockABI
            self.seccomp = seccomp
            self.limits = limits
            self.networkNamespace = networkNamespace
            self.missing = missing
            self.required = required
            self.memoryMiB = memoryMiB
        }
    }

    public struct Link: Sendable, Equatable {
        public var name: String
        public var plugin: String
        public var version: String
        public var sha256: String
        /// When its plugin was loaded (wall clock, seconds).
        public var loadedAt: Double
        public var license: String
        public var summary: String
        public var readingKinds: [String]
        public var abi: String
        public var isolation: String
        public var budgetMilliseconds: Double
        public var state: String
        public var statistics: Statistics
        public var lastPluginError: String?
        public var lastLie: String?
        public var sandbox: Sandbox?
        public var problem: StatusReply.LinkProblem?
        /// The plugin's own description of itself, as it wrote it (an object).
        public var description: JSON?

        public init(name: String, plugin: String, version: String, sha256: String, loadedAt: Double, license: String, summary: String,
                    readingKinds: [String], abi: String, isolation: String, budgetMilliseconds: Double, state: String, statistics: Statistics,
                    lastPluginError: String? = nil, lastLie: String? = nil, sandbox: Sandbox? = nil, problem: StatusReply.LinkProblem? = nil,
                    description: JSON? = nil) {
            self.name = name
            self.plugin = plugin
            self.version = version
            self.sha256 = sha256
            self.loadedAt = loadedAt
            self.license = license
            self.summary = summary
            self.readingKinds = readingKinds
            self.abi = abi
            self.isolation = isolation
            self.budgetMilliseconds = budgetMilliseconds
            self.state = state
            self.statistics = statistics
            self.lastPluginError = lastPluginError
            self.lastLie = lastLie
            self.sandbox = sandbox
            self.problem = problem
            self.description = description
        }
    }

    public var generation: Int64
    public var links: [Link]
    /// Readings no link recognised, returned by the host.
    public var terminalRejects: Int64

    public init(generation: Int64, links: [Link], terminalRejects: Int64) {
        self.generation = generation
        self.links = links
        self.terminalRejects = terminalRejects
    }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "chain")
        var links: [Link] = []
        for entry in try f.array("links") {
            links.append(try Link(json: entry))
        }
        let terminal = try ReplyFields(try f.object("terminal"), "chain terminal")
        self.init(generation: try f.int("generation"), links: links, terminalRejects: try terminal.int("rejects"))
    }

    public var json: JSON {
        ["generation": .int(generation), "links": .array(links.map(\.json)), "terminal": ["rejects": .int(terminalRejects)]]
    }
}

extension ChainReply.Link {
    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "chain link")
        let s = try ReplyFields(try f.object("statistics"), "chain link statistics")
        let statistics = ChainReply.Statistics(
            calls: try s.int("calls"), accepts: try s.int("accepts"), rejects: try s.int("rejects"), passes: try s.int("passes"),
            meanNanoseconds: try s.double("mean_ns"), sampledCalls: try s.int("sampled_calls"), pluginErrors: try s.int("plugin_errors"),
            lies: try s.int("lies"))
        var sandbox: ChainReply.Sandbox?
        if let object = try f.optionalObject("sandbox") {
            let b = try ReplyFields(object, "chain link sandbox")
            sandbox = ChainReply.Sandbox(
                layers: try b.string("layers"), landlockABI: try b.int("landlock_abi"), seccomp: try b.bool("seccomp"), limits: try b.bool("limits"),
                networkNamespace: try b.bool("network_namespace"), missing: try b.strings("missing"), required: try b.bool("required"),
                memoryMiB: try b.int("memory_mb"))
        }
        var problem: StatusReply.LinkProblem?
        if let object = try f.optionalObject("problem") {
            let p = try ReplyFields(object, "chain link problem")
            problem = StatusReply.LinkProblem(link: try p.string("link"), state: try p.string("state"), cause: try p.string("cause"),
                                              reason: try p.string("reason"), since: try p.double("since"))
        }
        self.init(
            name: try f.string("name"), plugin: try f.string("plugin"), version: try f.string("version"), sha256: try f.string("sha256"),
            loadedAt: try f.double("loaded_at"), license: try f.string("license"), summary: try f.string("summary"),
            readingKinds: try f.strings("reading_kinds"), abi: try f.string("abi"), isolation: try f.string("isolation"),
            budgetMilliseconds: try f.double("budget_ms"), state: try f.string("state"), statistics: statistics,
            lastPluginError: try f.optionalString("last_plugin_error"), lastLie: try f.optionalString("last_lie"), sandbox: sandbox,
            problem: problem, description: try f.optionalObject("description"))
    }

    public var json: JSON {
        var object: [String: JSON] = [
            "name": .string(name), "plugin": .string(plugin), "version": .string(version), "sha256": .string(sha256),
            "loaded_at": .double(loadedAt), "license": .string(license), "summary": .string(summary),
            "reading_kinds": .array(readingKinds.map(JSON.string)), "abi": .string(abi), "isolation": .string(isolation),
            "budget_ms": .double(budgetMilliseconds), "state": .string(state),
            "statistics": [
                "calls": .int(statistics.calls), "accepts": .int(statistics.accepts), "rejects": .int(statistics.rejects),
                "passes": .int(statistics.passes), "mean_ns": .double(statistics.meanNanoseconds), "sampled_calls": .int(statistics.sampledCalls),
                "plugin_errors": .int(statistics.pluginErrors), "lies": .int(statistics.lies),
            ],
        ]
        object["last_plugin_error"] = lastPluginError.map(JSON.string)
        object["last_lie"] = lastLie.map(JSON.string)
        if let sandbox {
            object["sandbox"] = [
                "layers": .string(sandbox.layers), "landlock_abi": .int(sandbox.landlockABI), "seccomp": .bool(sandbox.seccomp),
                "limits": .bool(sandbox.limits), "network_namespace": .bool(sandbox.networkNamespace),
                "missing": .array(sandbox.missing.map(JSON.string)), "required": .bool(sandbox.required), "memory_mb": .int(sandbox.memoryMiB),
            ]
        }
        object["problem"] = problem.map(StatusReply.json)
        object["description"] = description
        return .object(object)
    }
}
