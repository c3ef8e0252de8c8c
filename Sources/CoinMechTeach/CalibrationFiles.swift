import CoinMechCore
import CoinMechLedger
import CoinMechModel
import CoinMechCalibration
import CoinMechPlugins
import CoinMechSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes teach mode's calibration files, in three steps the deciding core orders: `stage`
/// writes the new file beside the old one (fsynced), `install` renames it over the old one once
/// the ledger holds its record, `discard` removes it when the ledger could not. A reader (a
/// reload) sees the old file or the new one, never half of one, and never one the ledger lacks.
package struct CalibrationFiles: Sendable {
    /// The source (mech) the files are taught on.
    package let source: String

    package init(source: String) { self.source = source }

    /// Fits the report's samples and writes the calibration file it belongs in, with the
    /// denomination replaced and the others taught before kept, beside that file.
    package func stage(_ report: TeachReport) -> Result<StagedCalibration, TeachFailure> {
        let request = report.session.request
        let taught: CoinCalibration.TaughtCoin
        switch report.calibration() {
        case .success(let coin): taught = coin
        case .failure(let failure): return .failure(failure)
        }
        var calibration = CoinCalibration(currency: request.currency, mech: source, denominations: [:])
        if FileManager.default.fileExists(atPath: request.file) {
            do throws(CalibrationError) {
                calibration = try CoinCalibration.load(path: request.file)
            } catch {
                return .failure(TeachFailure("\(error.message.replacingOccurrences(of: "key 'calibration': ", with: "")): move it away or mend it, then commit again"))
            }
            guard calibration.currency.uppercased() == request.currency else {
                return .failure(TeachFailure("\(request.file) holds a calibration for \(calibration.currency), not \(request.currency): move it away, then commit again"))
            }
        }
        calibration.mech = source
        calibration.denominations[request.code] = taught
        let bytes = Array((calibration.jsonText + "\n").utf8)
        let directory = (request.file as NSString).deletingLastPathComponent
        let staged = Self.stagedPath(for: request.file)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o750])
        } catch {
            return .failure(TeachFailure("cannot create \(directory): \(error.localizedDescription)"))
        }
        if let failure = Self.write(bytes, to: staged) { return .failure(failure) }
        func summary(_ axis: CoinSpread.Axis?) -> String? { axis.map { String(format: "%.3f±%.3f", $0.mean, $0.sigma) } }
        var axes: [String: String] = [:]
        axes["diameter"] = summary(taught.diameter)
        axes["weight"] = summary(taught.weight)
        axes["thickness"] = summary(taught.thickness)
        let record = Occurrence.TeachCommitRecord(
            source: source, currency: request.currency, code: request.code, samples: taught.samples, leftOut: report.leftOut.count,
            file: request.file, sha256: SHA256.hex(bytes), axes: axes, by: "")
        return .success(StagedCalibration(record: record, stagedPath: staged))
    }

    /// Renames the staged file over its calibration file, and makes the rename durable.
    package func install(_ staged: StagedCalibration) -> Result<StagedCalibration, TeachFailure> {
        guard rename(staged.stagedPath, staged.record.file) == 0 else {
            return .failure(TeachFailure("cannot rename \(staged.stagedPath) to \(staged.record.file): \(String(cString: strerror(errno)))"))
        }
        DirectorySync.sync((staged.record.file as NSString).deletingLastPathComponent)
        return .success(staged)
    }

    /// Removes a staged file the ledger did not record.
    package func discard(_ staged: StagedCalibration) {
        unlink(staged.stagedPath)
    }

    /// Where a calibration file's next version waits: beside it, hidden.
    package static func stagedPath(for file: String) -> String {
        "\((file as NSString).deletingLastPathComponent)/.\((file as NSString).lastPathComponent).staged"
    }

    /// At start, before the chain is built: a daemon that stopped between recording a
    /// calibration and renaming it into place left it staged; the newest `teach_commit` record
    /// of each file says which bytes belong there, so such a file is put in place now, and a
    /// staged file the ledger never recorded is removed. Returns what was done, for the log.
    package static func recover(_ commits: [LedgerEvent]) -> [String] {
        var done: [String] = []
        var seen: Set<String> = []
        for commit in commits.sorted(by: { $0.seq > $1.seq }) {
            guard let detail = commit.detail.flatMap({ try? JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }),
                  let file = detail["file"], let sha256 = detail["sha256"], seen.insert(file).inserted else { continue }
            let staged = stagedPath(for: file)
            guard let bytes = FileManager.default.contents(atPath: staged).map(Array.init) else { continue }
            guard SHA256.hex(bytes) == sha256 else {
                unlink(staged)
                done.append("removed \(staged): staged, never recorded")
                continue
            }
            guard rename(staged, file) == 0 else {
                done.append("cannot put \(staged) in place, recorded as event #\(commit.seq): \(String(cString: strerror(errno)))")
                continue
            }
            done.append("put in place \(file), recorded as event #\(commit.seq) before the daemon stopped")
        }
        return done
    }

    /// Writes `bytes` to a new file at `path` (0640) and fsyncs it; nil on success.
    package static func write(_ bytes: [UInt8], to path: String) -> TeachFailure? {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard fd >= 0 else { return TeachFailure("cannot write \(path): \(String(cString: strerror(errno)))") }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let message = String(cString: strerror(errno))
                close(fd)
                unlink(path)
                return TeachFailure("cannot write \(path): \(message)")
            }
            offset += written
        }
        guard fsync(fd) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            unlink(path)
            return TeachFailure("cannot write \(path): \(message)")
        }
        close(fd)
        return nil
    }
}
