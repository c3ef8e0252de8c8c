import CoinMechClient
import CoinMechProtocol
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The local clients of a cabinet through the soak: subscribers that come and go, and a control
/// client asking for status, totals, the chain, an explanation and an inhibit lift in turn. They
/// ride through the daemon's restarts (a failed connection is tried again).
final class SoakClients: Sendable {
    let socket: String
    private let stopping = Atomic<Bool>(false)
    private let subscriptions = Atomic<Int>(0)
    private let events = Atomic<Int>(0)
    private let requests = Atomic<Int>(0)
    private let done = DispatchGroup()

    init(socket: String) { self.socket = socket }

    func start() {
        done.enter()
        Thread { [self] in
            subscribers()
            done.leave()
        }.start()
        done.enter()
        Thread { [self] in
            controller()
            done.leave()
        }.start()
    }

    /// Stops them and waits; returns the subscriptions made, the events they read and the
    /// control client's requests answered.
    @discardableResult
    func stop() -> (Int, Int, Int) {
        stopping.store(true, ordering: .relaxed)
        _ = done.wait(timeout: .now() + 30)
        return (subscriptions.load(ordering: .relaxed), events.load(ordering: .relaxed), requests.load(ordering: .relaxed))
    }

    private var stopped: Bool { stopping.load(ordering: .relaxed) }

    /// A subscriber from a little before the last seq, reading for 0.5 to 3 s, then gone.
    private func subscribers() {
        var random = SystemRandomNumberGenerator()
        while !stopped {
            guard let client = try? CoinMechConnection(path: socket),
                  let last = (try? client.request("status")["last_seq"]?.int).flatMap({ $0 }),
                  (try? client.request("subscribe", ["since": .int(max(0, last - Int64.random(in: 0...500, using: &random)))])) != nil else {
                usleep(200_000)
                continue
            }
            subscriptions.add(1, ordering: .relaxed)
            let until = Date().addingTimeInterval(Double.random(in: 0.5...3, using: &random))
            while Date() < until, !stopped, (try? client.nextEvent(timeout: 0.5)) != nil {
                events.add(1, ordering: .relaxed)
            }
        }
    }

    /// A control client, a request every 200 ms.
    private func controller() {
        let commands: [(String, [String: JSON])] = [("status", [:]), ("totals", [:]), ("chain", [:]), ("explain", ["diameter": 24.26, "weight": 5.67]),
                                                    ("inhibit", ["on": false])]
        var client: CoinMechConnection?
        var turn = 0
        while !stopped {
            usleep(200_000)
            if client == nil { client = try? CoinMechConnection(path: socket) }
            let (command, arguments) = commands[turn % commands.count]
            turn += 1
            if (try? client?.request(command, arguments)) != nil { requests.add(1, ordering: .relaxed) } else { client = nil }
        }
    }
}
