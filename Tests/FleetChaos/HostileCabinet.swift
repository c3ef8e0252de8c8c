import CoinMechHarness
import CoinMechProtocol
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A fourth cabinet in the hands of someone who means harm (docs/FLEET.md, "What a cabinet
/// cannot do to the fleet"): what a stolen set of one cabinet's broker credentials allows,
/// its own topics only (the ACLs keep it off the others'). Over the run it publishes seqs
/// beyond the contract's range and far ahead of its own, payloads over the size cap, malformed
/// ones (not JSON, nested thousands deep, a NUL, another version, another cabinet's name, a coin
/// worth 9e18), every other seq, replies to resends nobody asked for, and floods; and it answers
/// every resend it is asked with "missing". Each through mosquitto_pub, as any client would.
final class HostileCabinet: Sendable {
    let name: String
    let site: String
    let dir: String
    /// How mosquitto_pub and mosquitto_sub reach the broker (address, CA).
    let broker: [String]
    /// `publisher`: the mosquitto_pub in flight, which `stop` cuts short.
    private let state = Mutex<(stop: Bool, published: Int, failures: Int, answered: Int, seqs: Int64, publisher: ChildProcess?)>(
        (false, 0, 0, 0, 0, nil))
    /// Signalled once by each of its two threads as it ends.
    private let ended = DispatchSemaphore(value: 0)

    init(name: String, site: String, root: String, broker: [String]) throws {
        self.name = name
        self.site = site
        self.broker = broker
        dir = "\(root)/\(name)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    var topic: String { "coinmech/v1/\(site)/\(name)" }
    var published: Int { state.withLock { $0.published } }
    var failures: Int { state.withLock { $0.failures } }
    /// Resends it answered with "missing".
    var answered: Int { state.withLock { $0.answered } }

    func event(_ seq: Int64, pad: Int = 0, extra: String = "") -> String {
        let padding = pad > 0 ? ",\"pad\":\"\(String(repeating: "x", count: pad))\"" : ""
        return #"{"v":1,"cabinet":"\#(name)","site":"\#(site)","seq":\#(seq),"published":\#(Date().timeIntervalSince1970),"event":{"seq":\#(seq),"time":\#(1_795_290_000 + Double(seq)),"kind":"decision"\#(extra)\#(padding)}}"#
    }

    /// Its every behaviour, in rounds `every` seconds apart, until `stop`; and its answers to
    /// the fleet's resends.
    func start(every: Double) throws {
        let commands = try ChildProcess(path: "/usr/bin/mosquitto_sub", broker + ["-q", "1", "-v", "-t", "\(topic)/cmd/#"],
                                        stderrPath: "\(dir)/commands.log")
        Thread { [self] in
            while !state.withLock({ $0.stop }) {
                guard let line = commands.readLine(timeout: 0.5) else { continue }
                let parts = line.split(separator: " ", maxSplits: 1)
                guard parts.count == 2, parts[0].hasSuffix("/cmd/resend"), let command = JSON.parse(String(parts[1])),
                      let id = command["id"]?.string, let from = command["args"]?["from"]?.int, let to = command["args"]?["to"]?.int else { continue }
                publish("reply/\(id)", [#"{"v":1,"cabinet":"\#(name)","site":"\#(site)","id":"\#(id)","cmd":"resend","time":1.0,"ok":true,"result":{"from":\#(from),"to":\#(to),"resent":0,"missing":[[\#(from),\#(to)]]}}"#])
                state.withLock { $0.answered += 1 }
            }
            commands.signal(SIGTERM)
            _ = commands.wait(timeout: 10)
            ended.signal()
        }.start()
        Thread { [self] in
            var round: Int64 = 0
            while !state.withLock({ $0.stop }) {
                round += 1
                // Every other seq, a thousand at a time, from where the last round left off.
                let base = state.withLock { $0.seqs }
                publish("event", stride(from: base + 2, through: base + 2000, by: 2).map { event($0) })
                state.withLock { $0.seqs = base + 2000 }
                publish("event", [
                    event(9_007_199_254_740_992), event(.max),
                    event(base + 50_000),
                    "not json at all",
                    String(repeating: "[", count: 50_000),
                    #"{"v":1,"cabinet":"\#(name)","site":"\#(site)","seq":1,"event":{"seq":1,"time":1,"kind":"decision","note":"a\u0000b"}}"#,
                    #"{"v":2,"cabinet":"\#(name)","site":"\#(site)","seq":1}"#,
                    #"{"v":1,"cabinet":"c-1","site":"\#(site)","seq":1,"event":{"seq":1,"time":1,"kind":"decision"}}"#,
                    event(base + 1, extra: #","value_minor":9000000000000000000,"currency":"USD""#),
                ])
                publishFile("event", event(base + 3, pad: 300_000))
                for n in 0..<3 {
                    publish("reply/forged-\(round)-\(n)", [#"{"v":1,"cabinet":"\#(name)","site":"\#(site)","id":"forged-\#(round)-\#(n)","cmd":"resend","time":1.0,"ok":true,"result":{"missing":[[1,1000000]]}}"#])
                }
                var waited = 0.0
                while waited < every, !state.withLock({ $0.stop }) {
                    usleep(100_000)  // the rounds' pace
                    waited += 0.1
                }
            }
            ended.signal()
        }.start()
    }

    /// `copies` rounds of its next 2,000 seqs, each event `pad` bytes more: what a flood costs
    /// the fleet, copies of a window it may hold (2,000 is each cabinet's queue). Returns when
    /// the broker has them all.
    func flood(copies: Int, pad: Int) {
        let base = state.withLock { $0.seqs }
        let window = (base + 1...base + 2000).map { event($0, pad: pad) }
        publish("event", Array((0..<copies).map { _ in window }.joined()))
    }

    /// Ends its rounds and its answers, the publish in flight cut short (a round's publish of
    /// 10,000 lines at QoS 1 can take minutes while the broker holds a flood for the fleet):
    /// both threads end and every child is reaped, or it throws.
    func stop() throws {
        let publisher = state.withLock { state in
            state.stop = true
            return state.publisher
        }
        publisher?.signal(SIGTERM)
        // The semaphore does not say which thread signalled: count how many ended.
        for stopped in 0..<2 where ended.wait(timeout: .now() + 20) == .timedOut {
            throw FleetChaosError("\(2 - stopped) of the hostile cabinet's 2 threads (its rounds, its answers to resends) did not stop within 20 s of being told to")
        }
    }

    /// Runs one mosquitto_pub as the publish in flight, unless the cabinet was told to stop:
    /// its exit status, nil when cut short or not started.
    private func run(_ pub: ChildProcess, timeout: Double) -> Int32? {
        let stopped = state.withLock { state in
            state.publisher = pub
            return state.stop
        }
        if stopped { pub.signal(SIGTERM) }
        var status = pub.wait(timeout: timeout)
        if status == nil {
            pub.signal(SIGKILL)
            status = pub.wait(timeout: 10)
        }
        state.withLock { $0.publisher = nil }
        return stopped ? nil : status
    }

    /// One mosquitto_pub per 10,000 lines (QoS 1): mosquitto_pub 2.0.11 given more with `-l`
    /// stops reading after about 35 MB.
    private func publish(_ level: String, _ lines: [String]) {
        for start in stride(from: 0, to: lines.count, by: 10_000) where !state.withLock({ $0.stop }) {
            let file = "\(dir)/lines-\(UUID().uuidString.prefix(8)).txt"
            defer { try? FileManager.default.removeItem(atPath: file) }
            guard (try? (lines[start..<min(start + 10_000, lines.count)].joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)) != nil,
                  let pub = try? ChildProcess(path: "/bin/sh", ["-c", "exec /usr/bin/mosquitto_pub \(broker.joined(separator: " ")) -q 1 -t \(topic)/\(level) -l < \(file)"],
                                              stderrPath: "\(dir)/publish.log") else {
                state.withLock { $0.failures += 1 }
                continue
            }
            // A broker being restarted by the run refuses it: counted, not retried.
            let ok = run(pub, timeout: 120) == 0
            state.withLock { if ok { $0.published += min(10_000, lines.count - start) } else { $0.failures += 1 } }
        }
    }

    /// One message from a file, however long (`mosquitto_pub -f`).
    private func publishFile(_ level: String, _ payload: String) {
        let file = "\(dir)/large-\(UUID().uuidString.prefix(8)).json"
        defer { try? FileManager.default.removeItem(atPath: file) }
        guard (try? payload.write(toFile: file, atomically: true, encoding: .utf8)) != nil,
              let pub = try? ChildProcess(path: "/usr/bin/mosquitto_pub", broker + ["-q", "1", "-t", "\(topic)/\(level)", "-f", file],
                                          stderrPath: "\(dir)/publish.log") else { return }
        let ok = run(pub, timeout: 60) == 0
        state.withLock { if ok { $0.published += 1 } else { $0.failures += 1 } }
    }
}
