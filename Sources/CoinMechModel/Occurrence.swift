/// Something other than a coin that the ledger records, with its typed fields. The ledger stores
/// the fields as the event's `detail` object of strings (docs/LEDGER.md lists them by kind).
public enum Occurrence: Sendable, Equatable {
    case sourceConnected(source: String, device: String)
    case sourceLost(source: String, device: String, reason: String)
    /// The mech (re)started; `implied` when the host inferred it (numbers went back, or the mech
    /// named a new boot at a connect).
    case mechPowerUp(source: String, epoch: Int64, boot: UInt64?, implied: Bool)
    /// The mech named its boot number for the current epoch.
    case mechSession(source: String, epoch: Int64, boot: UInt64)
    case mechStatus(source: String, status: String, detail: String)
    case startup(version: String, chainGeneration: UInt64, links: String)
    case shutdown(source: String, counts: ShutdownCounts)
    case inhibit(source: String, on: Bool, by: String)
    case reload(ReloadRecord)
    case reloadFailed(reason: String, generation: UInt64)
    /// The ledger could not write for this long, and then could again.
    case ledgerRecovered(failedFor: Duration)
    /// An accept reached the mech this late (the commit overran).
    case lateAnswer(source: String, epoch: Int64, deviceSeq: UInt64, lateBy: Duration)
    /// A link was taken out of service (hung or quarantined) and the mech inhibited.
    case quarantined(LinkOutOfService)
    /// A reload put a link out of service back.
    case quarantineLifted(link: String, generation: UInt64)
    /// Something a coin acceptor (ccTalk) reported besides a credit.
    case acceptor(source: String, AcceptorRecord)

    /// A link out of service: which, in which state, why.
    public struct LinkOutOfService: Sendable, Equatable {
        public var link: String
        /// `hung` or `quarantined`.
        public var state: String
        public var cause: String
        public var reason: String
        public var generation: UInt64
        public var plugin: String
        public var sha256: String

        public init(link: String, state: String, cause: String, reason: String, generation: UInt64, plugin: String, sha256: String) {
            self.link = link
            self.state = state
            self.cause = cause
            self.reason = reason
            self.generation = generation
            self.plugin = plugin
            self.sha256 = sha256
        }
    }
    /// Teach mode began: the source's readings are collected as samples of `code`, every coin returned.
    case teachStart(TeachStartRecord)
    /// What was taught was written to the calibration file coin-table reads.
    case teachCommit(TeachCommitRecord)
    /// Teach mode ended without writing anything.
    case teachAbort(source: String, currency: String, code: String, samples: Int, by: String)

    /// What a shutdown records: counts since start, and coins still pending.
    public struct ShutdownCounts: Sendable, Equatable {
        public var readings: UInt64
        public var duplicates: UInt64
        public var garbageBytes: Int
        public var badChecksums: Int
        public var truncated: Int
        public var overlong: Int
        public var malformed: Int
        public var pending: Int

        public init(readings: UInt64, duplicates: UInt64, garbageBytes: Int, badChecksums: Int, truncated: Int, overlong: Int,
                    malformed: Int, pending: Int) {
            self.readings = readings
            self.duplicates = duplicates
            self.garbageBytes = garbageBytes
            self.badChecksums = badChecksums
            self.truncated = truncated
            self.overlong = overlong
            self.malformed = malformed
            self.pending = pending
        }
    }

    /// A chain swapped in by a reload.
    public struct ReloadRecord: Sendable, Equatable {
        public var generation: UInt64
        public var previous: UInt64
        /// `name=plugin@version#sha256,…`
        public var links: String
        public var fingerprint: String

        public init(generation: UInt64, previous: UInt64, links: String, fingerprint: String) {
            self.generation = generation
            self.previous = previous
            self.links = links
            self.fingerprint = fingerprint
        }
    }

    /// Teach mode started for one denomination.
    public struct TeachStartRecord: Sendable, Equatable {
        public var source: String
        public var currency: String
        public var code: String
        /// Sample coins asked for.
        public var coins: Int
        /// The coin-table link whose windows are taught, and the calibration file it reads.
        public var link: String
        public var file: String
        public var by: String

        public init(source: String, currency: String, code: String, coins: Int, link: String, file: String, by: String) {
            self.source = source
            self.currency = currency
            self.code = code
            self.coins = coins
            self.link = link
            self.file = file
            self.by = by
        }
    }

    /// A taught denomination written to its calibration file.
    public struct TeachCommitRecord: Sendable, Equatable {
        public var source: String
        public var currency: String
        public var code: String
        /// Samples the window was fitted on, and readings left out as another coin's.
        public var samples: Int
        public var leftOut: Int
        public var file: String
        /// SHA-256 of the file as written, hex.
        public var sha256: String
        /// Mean ± σ per axis, for people: `diameter` "24.180±0.148", `weight`, `thickness`.
        public var axes: [String: String]
        public var by: String

        public init(source: String, currency: String, code: String, samples: Int, leftOut: Int, file: String, sha256: String,
                    axes: [String: String], by: String) {
            self.source = source
            self.currency = currency
            self.code = code
            self.samples = samples
            self.leftOut = leftOut
            self.file = file
            self.sha256 = sha256
            self.axes = axes
            self.by = by
        }
    }

    public var kind: EventKind {
        switch self {
        case .sourceConnected: .sourceConnected
        case .sourceLost: .sourceLost
        case .mechPowerUp: .mechPowerUp
        case .mechSession: .mechSession
        case .mechStatus: .mechStatus
        case .startup: .startup
        case .shutdown: .shutdown
        case .inhibit: .inhibit
        case .reload: .reload
        case .reloadFailed: .reloadFailed
        case .ledgerRecovered: .ledgerRecovered
        case .lateAnswer: .lateAnswer
        case .quarantined: .quarantined
        case .quarantineLifted: .quarantineLifted
        case .teachStart: .teachStart
        case .teachCommit: .teachCommit
        case .teachAbort: .teachAbort
        case .acceptor(_, let record): record.kind
        }
    }

    /// The source the occurrence belongs to, if any.
    public var source: String? {
        switch self {
        case .sourceConnected(let source, _), .sourceLost(let source, _, _), .mechPowerUp(let source, _, _, _),
             .mechSession(let source, _, _), .mechStatus(let source, _, _), .shutdown(let source, _), .inhibit(let source, _, _),
             .lateAnswer(let source, _, _, _), .teachAbort(let source, _, _, _, _),
             .acceptor(let source, _):
            source
        case .teachStart(let record):
            record.source
        case .teachCommit(let record):
            record.source
        case .startup, .reload, .reloadFailed, .ledgerRecovered, .quarantined, .quarantineLifted:
            nil
        }
    }

    /// The epoch it moves the source to, and the boot number of that epoch.
    public var epoch: (epoch: Int64, boot: UInt64?)? {
        switch self {
        case .mechPowerUp(_, let epoch, let boot, _): (epoch, boot)
        case .mechSession(_, let epoch, let boot): (epoch, boot)
        case .acceptor(_, .restarted(let epoch, _)): (Int64(bitPattern: epoch), nil)
        default: nil
        }
    }

    /// The event's `epoch` and `device_seq` columns, when it names a device event.
    public var place: (epoch: Int64?, deviceSeq: Int64?) {
        switch self {
        case .acceptor(_, let record):
            let place = record.place
            return (place.epoch.map { Int64(bitPattern: $0) }, place.number.map { Int64(bitPattern: $0) })
        default:
            return (epoch?.epoch, nil)
        }
    }

    /// The chain generation it records, if any.
    public var chainGeneration: UInt64? {
        switch self {
        case .startup(_, let generation, _): generation
        case .reload(let record): record.generation
        default: nil
        }
    }

    /// The fields as the `detail` object stores them (strings; docs/LEDGER.md).
    public var detail: [String: String] {
        switch self {
        case .sourceConnected(_, let device):
            return ["device": device]
        case .sourceLost(_, let device, let reason):
            return ["device": device, "reason": reason]
        case .mechPowerUp(_, let epoch, let boot, let implied):
            var detail = ["epoch": "\(epoch)"]
            if let boot { detail["boot"] = "\(boot)" }
            if implied { detail["implied"] = "true" }
            return detail
        case .mechSession(_, let epoch, let boot):
            return ["epoch": "\(epoch)", "boot": "\(boot)"]
        case .mechStatus(_, let status, let detail):
            return ["status": status, "detail": detail]
        case .startup(let version, let generation, let links):
            return ["version": version, "chain_generation": "\(generation)", "links": links]
        case .shutdown(_, let counts):
            return [
                "readings": "\(counts.readings)", "duplicates": "\(counts.duplicates)", "garbage_bytes": "\(counts.garbageBytes)",
                "bad_checksums": "\(counts.badChecksums)", "truncated": "\(counts.truncated)", "overlong": "\(counts.overlong)",
                "malformed": "\(counts.malformed)", "pending": "\(counts.pending)",
            ]
        case .inhibit(_, let on, let by):
            return ["on": "\(on)", "by": by]
        case .reload(let record):
            return ["generation": "\(record.generation)", "previous": "\(record.previous)", "links": record.links, "fingerprint": record.fingerprint]
        case .reloadFailed(let reason, let generation):
            return ["reason": reason, "generation": "\(generation)"]
        case .ledgerRecovered(let failedFor):
            return ["failed_for_s": Self.format(failedFor, scale: 1)]
        case .lateAnswer(_, let epoch, let deviceSeq, let lateBy):
            return ["epoch": "\(epoch)", "devseq": "\(deviceSeq)", "late_by_ms": Self.format(lateBy, scale: 1000)]
        case .quarantined(let out):
            return ["link": out.link, "state": out.state, "cause": out.cause, "reason": out.reason,
                    "generation": "\(out.generation)", "plugin": out.plugin, "sha256": out.sha256]
        case .quarantineLifted(let link, let generation):
            return ["link": link, "generation": "\(generation)"]
        case .teachStart(let r):
            return ["currency": r.currency, "code": r.code, "coins": "\(r.coins)", "link": r.link, "file": r.file, "by": r.by]
        case .teachCommit(let r):
            return ["currency": r.currency, "code": r.code, "samples": "\(r.samples)", "left_out": "\(r.leftOut)", "file": r.file,
                    "sha256": r.sha256, "by": r.by].merging(r.axes) { kept, _ in kept }
        case .teachAbort(_, let currency, let code, let samples, let by):
            return ["currency": currency, "code": code, "samples": "\(samples)", "by": by]
        case .acceptor(_, let record):
            return record.detail
        }
    }

    /// A duration in seconds × `scale`, one decimal.
    static func format(_ duration: Duration, scale: Double) -> String {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let tenths = (seconds * scale * 10).rounded()
        return "\(Int64(tenths) / 10).\(abs(Int64(tenths)) % 10)"
    }
}
