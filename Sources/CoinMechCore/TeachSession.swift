import CoinMechModel

/// What the operator asks teach mode to learn: one denomination, from this many sample coins,
/// for the coin-table link (and its calibration file) the shell found for it.
public struct TeachRequest: Sendable, Equatable {
    public var currency: String
    public var code: String
    public var coins: Int
    public var link: String
    public var file: String

    public init(currency: String, code: String, coins: Int, link: String, file: String) {
        self.currency = currency
        self.code = code
        self.coins = coins
        self.link = link
        self.file = file
    }
}

/// Teach mode on the core's source: every reading is returned, and those that measured a
/// diameter and a weight are kept as samples of the denomination taught, up to the number asked.
public struct TeachSession: Sendable, Equatable {
    /// One sample coin as the mech measured it.
    public struct Sample: Sendable, Equatable {
        public var epoch: Int64
        public var deviceSeq: UInt64
        public var diameterMM: Double
        public var weightG: Double
        public var thicknessMM: Double?
        /// The alloy axis, where the mech measures it: taught with the rest.
        public var alloy: AlloySignature?

        public init(epoch: Int64, deviceSeq: UInt64, diameterMM: Double, weightG: Double, thicknessMM: Double?, alloy: AlloySignature? = nil) {
            self.epoch = epoch
            self.deviceSeq = deviceSeq
            self.diameterMM = diameterMM
            self.weightG = weightG
            self.thicknessMM = thicknessMM
            self.alloy = alloy
        }
    }

    public var request: TeachRequest
    /// Who started it.
    public var by: String
    public var startedAt: Instant
    /// Recorded samples, in the order they came.
    public private(set) var samples: [Sample] = []
    /// Readings returned without being kept: no weight measured, or enough samples already.
    public private(set) var notCollected = 0

    public init(request: TeachRequest, by: String, startedAt: Instant, samples: [Sample] = []) {
        self.request = request
        self.by = by
        self.startedAt = startedAt
        self.samples = samples
    }

    /// Every sample asked for is in.
    public var isComplete: Bool { samples.count >= request.coins }

    /// What becomes of a reading while teaching, `pendingInBatch` samples of the batch being
    /// decided not yet recorded: a sample (when it measured diameter and weight and more are
    /// wanted) or not, and the message its return is recorded with.
    func judge(_ reading: MechReading, epoch: Int64, pendingInBatch: Int) -> (sample: Sample?, message: String) {
        let measurement = reading.measurement
        let name = "\(request.currency) \(request.code)"
        guard let diameter = measurement.diameterMM, let weight = measurement.weightG else {
            let missing = measurement.diameterMM == nil ? "diameter" : "weight"
            return (nil, "teach mode (\(name)): not kept, the mech measured no \(missing); every coin is returned")
        }
        let number = samples.count + pendingInBatch + 1
        guard number <= request.coins else {
            return (nil, "teach mode (\(name)): all \(request.coins) sample coins are in; commit or abort (coinctl teach); every coin is returned")
        }
        return (Sample(epoch: epoch, deviceSeq: reading.deviceSeq, diameterMM: diameter, weightG: weight, thicknessMM: measurement.thicknessMM,
                       alloy: measurement.alloy),
                "teach mode (\(name)): sample \(number) of \(request.coins); every coin is returned")
    }

    /// Keeps a sample whose return is on the ledger.
    mutating func keep(_ sample: Sample) { samples.append(sample) }

    /// Counts a reading returned without being kept.
    mutating func skipped() { notCollected += 1 }
}

/// A calibration written beside its file, not yet in place: the shell's answer to
/// `.stageCalibration`, handed back in `.installCalibration` or `.discardCalibration`.
public struct StagedCalibration: Sendable, Equatable {
    /// What the ledger records (the core fills in who committed).
    public var record: Occurrence.TeachCommitRecord
    /// Where the new file waits to be renamed over `record.file`.
    public var stagedPath: String

    public init(record: Occurrence.TeachCommitRecord, stagedPath: String) {
        self.record = record
        self.stagedPath = stagedPath
    }
}

/// Why teach mode could not stage or install a calibration, in words an operator can act on.
public struct TeachFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
