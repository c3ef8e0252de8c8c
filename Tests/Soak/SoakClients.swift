import CoinMechClient
import CoinMechProtocol
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The local clients of a cabinet through the soak: subscribers that come and go, a control
/// client asking for status, totals, the chain, an explanation and an inhibit lift in turn, and
/// a kiosk selling from the customer's credit. They ride through the daemon's restarts (a failed
/// connection is tried again).
final class SoakClients: Sendable {
    let socket: String
    private let stopping = Atomic<Bool>(false)
    private let subscriptions = Atomic<Int>(0)
    private let events = Atomic<Int>(0)
    private let requests = Atomic<Int>(0)
    private let sales = Mutex(SoakSales())
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
        done.enter()
        Thread { [self] in
            seller()
            done.leave()
        }.start()
    }

    /// Stops them and waits; returns the subscriptions made, the events they read, the control
    /// client's requests answered and the kiosk's sales.
    @discardableResult
    func stop() -> (Int, Int, Int, SoakSales) {
        stopping.store(true, ordering: .relaxed)
        _ = done.wait(timeout: .now() + 30)
        return (subscriptions.load(ordering: .relaxed), events.load(ordering: .relaxed), requests.load(ordering: .relaxed), sales.withLock { $0 })
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

    /// A kiosk, a sale every 100 ms as a sale application makes them: it reads the balance and
    /// spends part of it (all of it now and then) under a new request id, asking again with the
    /// same id through lost replies and daemon kills until it has the answer; every tenth
    /// approved sale is refunded (the product did not drop), and every twentieth asks for more
    /// than the balance, which must be refused unless coins came meanwhile.
    private func seller() {
        var random = SystemRandomNumberGenerator()
        var client: CoinMechConnection?
        var number = 0
        while !stopped {
            usleep(100_000)
            guard let read = answer(&client, "credit", [:]),
                  let balance = read["accounts"]?.array?.first?["balance_minor"]?.int, balance > 0 else { continue }
            number += 1
            let probe = number % 20 == 0 && balance < 100_000
            let most = min(balance, 100_000)
            let amount = probe ? balance + 1 : number % 7 == 0 ? most : Int64.random(in: 1...most, using: &random)
            var sale = SoakSales.Sale(id: "soak-sale-\(number)", amountMinor: amount)
            defer { sales.withLock { $0.sales.append(sale) } }
            guard let reply = answer(&client, "spend", ["amount_minor": .int(amount), "item": .string("A\(number % 40)"), "request_id": .string(sale.id)]) else { continue }
            switch reply["state"]?.string {
            case "approved": sale.approved = true
            case "refused" where probe: sale.approved = false; sales.withLock { $0.refusedShort += 1 }
            default:
                sale.approved = reply["state"]?.string == "refused" ? false : nil
                sales.withLock { $0.problems.append("sale \(sale.id) of \(amount) with \(balance) of credit: \(reply)") }
            }
            guard sale.approved == true, number % 10 == 0 else { continue }
            guard let refund = answer(&client, "refund", ["request_id": .string(sale.id)]) else { continue }
            if refund["state"]?.string == "refunded" { sale.refunded = true } else { sales.withLock { $0.problems.append("refund of \(sale.id): \(refund)") } }
        }
    }

    /// The daemon's reply to `cmd`, asked again (with the same arguments: a request id moves once)
    /// after a lost connection or `unavailable` until one comes; an error reply is a problem on
    /// record, and nil. Once the soak stops it tries for 20 s more: the last daemon is still up.
    private func answer(_ client: inout CoinMechConnection?, _ cmd: String, _ arguments: [String: JSON]) -> JSON? {
        var giveUp: Date?
        while true {
            if stopped {
                if giveUp == nil { giveUp = Date().addingTimeInterval(20) }
                if let giveUp, Date() > giveUp { return nil }
            }
            if client == nil { client = try? CoinMechConnection(path: socket) }
            guard let connected = client else {
                usleep(50_000)
                continue
            }
            do {
                return try connected.request(cmd, arguments)
            } catch .server(let code, let message) where code != "unavailable" {
                sales.withLock { $0.problems.append("\(cmd) \(arguments): \(message) (\(code))") }
                return nil
            } catch {
                client = nil
                usleep(50_000)
            }
        }
    }
}
