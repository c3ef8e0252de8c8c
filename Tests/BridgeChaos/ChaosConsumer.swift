import CoinMechHarness
import CoinMechProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The fleet's side, as docs/FLEET.md asks of a consumer: a persistent session (mosquitto_sub,
/// a fixed client id, clean session off) on the cabinet's `event`; each event stored once by
/// seq (this process is the database, and outlives every fault); the highest contiguous seq
/// stored published, retained, on `ack` after each batch that held any event, duplicates
/// included (F6), at most every 0.3 s.
final class ChaosConsumer {
    let broker: MosquittoBroker
    let dir: String
    let cabinet: String
    let prefix: String
    private var subscriber: ChildProcess?
    private var runs = 0
    /// seq → (kind, time) of the first copy stored.
    private(set) var stored: [Int64: (kind: String, time: Double)] = [:]
    private(set) var copies = 0
    private(set) var differing: [Int64] = []
    private(set) var skips: [(run: Int, after: Int64, got: Int64)] = []
    private(set) var acked: Int64 = 0
    /// The highest seq on this subscriber's connection to this broker incarnation.
    private var highestThisRun: Int64?
    private var unackedBatch = false
    private var lastAck = 0.0

    init(broker: MosquittoBroker, dir: String, cabinet: String, prefix: String) {
        self.broker = broker
        self.dir = dir
        self.cabinet = cabinet
        self.prefix = prefix
    }

    /// Reads what arrives for `seconds`, acking as it goes; a subscriber that the broker's death
    /// ended is started again with the same session.
    func pump(for seconds: Double) throws {
        let end = Date().addingTimeInterval(seconds)
        repeat {
            try ensureSubscriber()
            if let line = subscriber?.readLine(timeout: 0.1) { try take(line) }
            try ackIfDue()
        } while Date() < end
    }

    /// The subscriber killed with -9, then a new one with the same session: what libmosquitto
    /// had PUBACKed and not yet printed is gone, and only the ack brings it back.
    func kill() {
        subscriber?.signal(SIGKILL)
        _ = subscriber?.wait(timeout: 10)
        subscriber = nil
    }

    /// The broker started again: what its new incarnation sends is a stream of its own. It may
    /// begin with an older slice from its file, or (its sessions lost) after seqs published
    /// before the subscriber came back; the end-to-end ack repairs both.
    func brokerRestarted() {
        runs += 1
        trace("# broker restarted: run \(runs)")
        highestThisRun = nil
    }

    func stop() {
        subscriber?.signal(SIGTERM)
        _ = subscriber?.wait(timeout: 10)
        subscriber = nil
    }

    private func ensureSubscriber() throws {
        if let running = subscriber, running.isRunning { return }
        subscriber = nil
        guard Loopback.accepts(broker.port) else {
            usleep(50_000)
            return
        }
        runs += 1
        highestThisRun = nil
        trace("# subscriber \(runs)")
        subscriber = try ChildProcess(path: "/usr/bin/mosquitto_sub", broker.clientArguments + ["-q", "1", "-c", "-i", "fleet-chaos",
                                                                      "-t", "\(prefix)event"], stderrPath: "\(dir)/subscriber.log")
    }

    private func take(_ line: String) throws {
        guard let message = JSON.parse(line), message["v"]?.int == 1, message["cabinet"]?.string == cabinet, let seq = message["seq"]?.int,
              let event = message["event"], event["seq"]?.int == seq, let kind = event["kind"]?.string, let time = event["time"]?.double else {
            throw ChaosError("not an event message of cabinet \(cabinet): \(line)")
        }
        copies += 1
        unackedBatch = true
        trace("\(runs) \(seq) \(message["published"]?.double ?? 0)")
        // A skip ahead over seqs the store lacks, on one connection: the stream left a hole. (A
        // broker restored from its file replays an older slice first, then the bridge goes on
        // after the ack: a jump over seqs already stored is no hole.)
        if let highest = highestThisRun, seq > highest + 1, ((highest + 1)..<seq).contains(where: { stored[$0] == nil }) {
            skips.append((runs, highest, seq))
        }
        highestThisRun = max(highestThisRun ?? seq, seq)
        if let first = stored[seq] {
            // F5: a copy that differs in kind or time is another event, not a duplicate.
            if first.kind != kind || abs(first.time - time) > 0.0005 { differing.append(seq) }
            return
        }
        stored[seq] = (kind, time)
    }

    /// What arrived, one line per copy (run, seq, published), for a run kept with --keep.
    func trace(_ line: String) {
        if traceFile == nil { traceFile = fopen("\(dir)/received.log", "a") }
        fputs(line + "\n", traceFile)
    }

    private var traceFile: UnsafeMutablePointer<FILE>?

    private func ackIfDue() throws {
        let now = Date().timeIntervalSince1970
        guard unackedBatch, now - lastAck >= 0.3 else { return }
        while stored[acked + 1] != nil { acked += 1 }
        let ack = try ChildProcess(path: "/usr/bin/mosquitto_pub", broker.clientArguments + ["-q", "1", "-r", "-t", "\(prefix)ack",
                                                                   "-m", #"{"v":1,"cabinet":"\#(cabinet)","seq":\#(acked),"time":\#(now),"by":"chaos"}"#],
                                   stderrPath: "\(dir)/acks.log")
        // A broker that is down refuses it: the ack goes again after the next batch.
        if ack.wait(timeout: 10) == 0 { unackedBatch = false }
        lastAck = now
    }
}
