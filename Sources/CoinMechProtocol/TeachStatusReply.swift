/// `teach_status`: nothing when not teaching; else the session, the figures of the sample coins
/// per axis with the window a commit would write, the coins left out and why, the neighbours'
/// windows, every sample, the alloy, and what stops a commit (docs/PROTOCOL.md, "teach_status").
public struct TeachStatusReply: OperatorReply {
    /// One reading of a sample coin.
    public struct Sample: Sendable, Equatable {
        public var diameter: Double
        public var weight: Double
        public var thickness: Double?

        public init(diameter: Double, weight: Double, thickness: Double?) {
            self.diameter = diameter
            self.weight = weight
            self.thickness = thickness
        }
    }

    public struct Window: Sendable, Equatable {
        public var low: Double
        public var high: Double

        public init(low: Double, high: Double) {
            self.low = low
            self.high = high
        }
    }

    /// The samples' figures on one axis, and the window a commit would write.
    public struct Axis: Sendable, Equatable {
        public var unit: String
        public var count: Int64
        public var mean: Double
        public var sigma: Double
        public var min: Double
        public var max: Double
        public var window: Window
        /// The mint's figure, when the coin is one the project knows.
        public var mint: Double?
        public var biasPercent: Double?
        public var expectedSigma: Double?

        public init(unit: String, count: Int64, mean: Double, sigma: Double, min: Double, max: Double, window: Window, mint: Double? = nil,
                    biasPercent: Double? = nil, expectedSigma: Double? = nil) {
            self.unit = unit
            self.count = count
            self.mean = mean
            self.sigma = sigma
            self.min = min
            self.max = max
            self.window = window
            self.mint = mint
            self.biasPercent = biasPercent
            self.expectedSigma = expectedSigma
        }
    }

    /// A sample coin not kept, and why.
    public struct LeftOut: Sendable, Equatable {
        public var deviceSeq: Int64
        public var epoch: Int64
        public var reading: Sample
        public var why: String

        public init(deviceSeq: Int64, epoch: Int64, reading: Sample, why: String) {
            self.deviceSeq = deviceSeq
            self.epoch = epoch
            self.reading = reading
            self.why = why
        }
    }

    /// Another coin of the link's table, how far the taught one is from it, and its windows.
    public struct Neighbour: Sendable, Equatable {
        public struct Spread: Sendable, Equatable {
            public var mean: Double
            public var sigma: Double
            public var window: Window

            public init(mean: Double, sigma: Double, window: Window) {
                self.mean = mean
                self.sigma = sigma
                self.window = window
            }
        }

        public var name: String
        public var origin: String
        public var separationSigma: Double
        public var theirSigma: Double
        public var overlap: Bool
        /// Per axis ("diameter", "weight", "thickness"), those it has.
        public var spreads: [String: Spread]

        public init(name: String, origin: String, separationSigma: Double, theirSigma: Double, overlap: Bool, spreads: [String: Spread]) {
            self.name = name
            self.origin = origin
            self.separationSigma = separationSigma
            self.theirSigma = theirSigma
            self.overlap = overlap
            self.spreads = spreads
        }
    }

    /// The alloy the samples showed, on one channel of the eddy-current sensor.
    public struct Alloy: Sendable, Equatable {
        public struct Figure: Sendable, Equatable {
            public var mean: Double
            public var sigma: Double

            public init(mean: Double, sigma: Double) {
                self.mean = mean
                self.sigma = sigma
            }
        }

        public var samples: Int64
        public var conductivityLow: Figure
        public var conductivityHigh: Figure
        /// The permeability's mean, and the σ of its logarithm.
        public var permeability: Figure?

        public init(samples: Int64, conductivityLow: Figure, conductivityHigh: Figure, permeability: Figure?) {
            self.samples = samples
            self.conductivityLow = conductivityLow
            self.conductivityHigh = conductivityHigh
            self.permeability = permeability
        }
    }

    public struct Session: Sendable, Equatable {
        public var source: String
        public var currency: String
        public var code: String
        public var link: String
        public var file: String
        public var by: String
        public var startedSecondsAgo: Double
        public var coins: Int64
        public var collected: Int64
        public var kept: Int64
        public var notCollected: Int64
        public var minimum: Int64
        public var committable: Bool
        public var windowSigma: Double
        public var marginSigma: Double
        public var axes: [String: Axis]
        public var leftOut: [LeftOut]
        public var neighbours: [Neighbour]
        public var samples: [Sample]
        public var alloy: [Alloy]
        public var warnings: [String]
        public var problems: [String]

        public init(source: String, currency: String, code: String, link: String, file: String, by: String, startedSecondsAgo: Double,
                    coins: Int64, collected: Int64, kept: Int64, notCollected: Int64, minimum: Int64, committable: Bool, windowSigma: Double,
                    marginSigma: Double, axes: [String: Axis], leftOut: [LeftOut], neighbours: [Neighbour], samples: [Sample], alloy: [Alloy],
                    warnings: [String], problems: [String]) {
            self.source = source
            self.currency = currency
            self.code = code
            self.link = link
            self.file = file
            self.by = by
            self.startedSecondsAgo = startedSecondsAgo
            self.coins = coins
            self.collected = collected
            self.kept = kept
            self.notCollected = notCollected
            self.minimum = minimum
            self.committable = committable
            self.windowSigma = windowSigma
            self.marginSigma = marginSigma
            self.axes = axes
            self.leftOut = leftOut
            self.neighbours = neighbours
            self.samples = samples
            self.alloy = alloy
            self.warnings = warnings
            self.problems = problems
        }
    }

    /// The axes in the order people read them.
    public static let axisNames = ["diameter", "weight", "thickness"]

    /// nil when not teaching.
    public var session: Session?

    public init(session: Session?) { self.session = session }

    public init(json: JSON) throws(ReplyError) {
        let f = try ReplyFields(json, "teach status")
        guard try f.bool("teaching") else {
            self.init(session: nil)
            return
        }
        func sample(_ json: JSON) throws(ReplyError) -> Sample {
            guard let figures = json.array, (2...3).contains(figures.count), let diameter = figures[0].double, let weight = figures[1].double else {
                throw ReplyError("a teach status sample is not [diameter, weight, thickness or null]: \(json)")
            }
            let thickness: Double?
            if figures.count == 3, figures[2] != .null {
                guard let value = figures[2].double else { throw ReplyError("a teach status sample's thickness is not a number: \(json)") }
                thickness = value
            } else {
                thickness = nil
            }
            return Sample(diameter: diameter, weight: weight, thickness: thickness)
        }
        func window(_ json: JSON, _ what: String) throws(ReplyError) -> Window {
            let w = try ReplyFields(json, what)
            return Window(low: try w.double("low"), high: try w.double("high"))
        }
        var axes: [String: Axis] = [:]
        for (name, entry) in try ReplyFields(try f.object("axes"), "teach status axes").object {
            let a = try ReplyFields(entry, "teach status axis")
            axes[name] = Axis(unit: try a.string("unit"), count: try a.int("count"), mean: try a.double("mean"), sigma: try a.double("sigma"),
                              min: try a.double("min"), max: try a.double("max"), window: try window(try a.object("window"), "teach status window"),
                              mint: try a.optionalDouble("mint"), biasPercent: try a.optionalDouble("bias_percent"),
                              expectedSigma: try a.optionalDouble("expected_sigma"))
        }
        var leftOut: [LeftOut] = []
        for entry in try f.array("left_out") {
            let l = try ReplyFields(entry, "teach status left-out coin")
            guard let reading = l.object["reading"] else { throw ReplyError("a teach status left-out coin has no \"reading\"") }
            leftOut.append(LeftOut(deviceSeq: try l.int("device_seq"), epoch: try l.int("epoch"), reading: try sample(reading), why: try l.string("why")))
        }
        var neighbours: [Neighbour] = []
        for entry in try f.array("neighbours") {
            let n = try ReplyFields(entry, "teach status neighbour")
            var spreads: [String: Neighbour.Spread] = [:]
            for (axis, spread) in try ReplyFields(try n.object("window"), "teach status neighbour window").object {
                let s = try ReplyFields(spread, "teach status neighbour spread")
                spreads[axis] = .init(mean: try s.double("mean"), sigma: try s.double("sigma"), window: Window(low: try s.double("low"), high: try s.double("high")))
            }
            neighbours.append(Neighbour(name: try n.string("name"), origin: try n.string("origin"), separationSigma: try n.double("separation_sigma"),
                                        theirSigma: try n.double("their_sigma"), overlap: try n.bool("overlap"), spreads: spreads))
        }
        var samples: [Sample] = []
        for entry in try f.array("samples") { samples.append(try sample(entry)) }
        var alloy: [Alloy] = []
        for entry in try f.array("alloy") {
            let a = try ReplyFields(entry, "teach status alloy")
            func figure(_ key: String, sigma: String = "sigma") throws(ReplyError) -> Alloy.Figure {
                let g = try ReplyFields(try a.object(key), "teach status alloy \(key)")
                return .init(mean: try g.double("mean"), sigma: try g.double(sigma))
            }
            let permeability: Alloy.Figure? = try a.optionalObject("permeability") == nil ? nil : try figure("permeability", sigma: "log_sigma")
            alloy.append(Alloy(samples: try a.int("samples"), conductivityLow: try figure("conductivity_low"),
                               conductivityHigh: try figure("conductivity_high"), permeability: permeability))
        }
        self.init(session: Session(
            source: try f.string("source"), currency: try f.string("currency"), code: try f.string("code"), link: try f.string("link"),
            file: try f.string("file"), by: try f.string("by"), startedSecondsAgo: try f.double("started_s_ago"), coins: try f.int("coins"),
            collected: try f.int("collected"), kept: try f.int("kept"), notCollected: try f.int("not_collected"), minimum: try f.int("minimum"),
            committable: try f.bool("committable"), windowSigma: try f.double("window_sigma"), marginSigma: try f.double("margin_sigma"),
            axes: axes, leftOut: leftOut, neighbours: neighbours, samples: samples, alloy: alloy, warnings: try f.strings("warnings"),
            problems: try f.strings("problems")))
    }

    public var json: JSON {
        guard let s = session else { return ["teaching": false] }
        func sample(_ sample: Sample) -> JSON { [.double(sample.diameter), .double(sample.weight), sample.thickness.map(JSON.double) ?? .null] }
        func axis(_ a: Axis) -> JSON {
            var object: [String: JSON] = [
                "unit": .string(a.unit), "count": .int(a.count), "mean": .double(a.mean), "sigma": .double(a.sigma), "min": .double(a.min),
                "max": .double(a.max), "window": ["low": .double(a.window.low), "high": .double(a.window.high)],
            ]
            object["mint"] = a.mint.map(JSON.double)
            object["bias_percent"] = a.biasPercent.map(JSON.double)
            object["expected_sigma"] = a.expectedSigma.map(JSON.double)
            return .object(object)
        }
        return [
            "teaching": true, "source": .string(s.source), "currency": .string(s.currency), "code": .string(s.code), "link": .string(s.link),
            "file": .string(s.file), "by": .string(s.by), "started_s_ago": .double(s.startedSecondsAgo), "coins": .int(s.coins),
            "collected": .int(s.collected), "kept": .int(s.kept), "not_collected": .int(s.notCollected), "minimum": .int(s.minimum),
            "committable": .bool(s.committable), "window_sigma": .double(s.windowSigma), "margin_sigma": .double(s.marginSigma),
            "axes": .object(s.axes.mapValues(axis)),
            "left_out": .array(s.leftOut.map { ["device_seq": .int($0.deviceSeq), "epoch": .int($0.epoch), "reading": sample($0.reading), "why": .string($0.why)] }),
            "neighbours": .array(s.neighbours.map { n in
                ["name": .string(n.name), "origin": .string(n.origin), "separation_sigma": .double(n.separationSigma), "their_sigma": .double(n.theirSigma),
                 "overlap": .bool(n.overlap),
                 "window": .object(n.spreads.mapValues { ["mean": .double($0.mean), "sigma": .double($0.sigma), "low": .double($0.window.low), "high": .double($0.window.high)] })]
            }),
            "samples": .array(s.samples.map(sample)),
            "alloy": .array(s.alloy.map { a in
                var object: [String: JSON] = [
                    "samples": .int(a.samples),
                    "conductivity_low": ["mean": .double(a.conductivityLow.mean), "sigma": .double(a.conductivityLow.sigma)],
                    "conductivity_high": ["mean": .double(a.conductivityHigh.mean), "sigma": .double(a.conductivityHigh.sigma)],
                ]
                object["permeability"] = a.permeability.map { ["mean": .double($0.mean), "log_sigma": .double($0.sigma)] }
                return .object(object)
            }),
            "warnings": .array(s.warnings.map(JSON.string)), "problems": .array(s.problems.map(JSON.string)),
        ]
    }
}
