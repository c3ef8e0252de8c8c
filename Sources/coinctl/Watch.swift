import ArgumentParser
import CoinMechClient
import CoinMechModel
import CoinMechProtocol
import Foundation

extension CoinCtl {
    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Follow coins and events as they happen; resumes after a reconnect without gaps or repeats.")
        @OptionGroup var common: Common
        @Option(help: "Replay recorded events after this seq first (default: only new ones).") var since: Int64?
        @Flag(help: "Show accepted coins as soon as they are decided, before the mech confirms them (not credit yet).") var pending = false

        func run() throws {
            var last = since
            var value: [String: Int64] = [:]
            // The currency of each payout asked, for its steps' and settlement's lines.
            var payoutCurrencies: [String: String] = [:]
            var first = true
            while true {
                let connection: CoinMechConnection
                do {
                    connection = try CoinMechConnection(path: common.path)
                } catch {
                    if first { throw fail(error) }
                    sleep(1)
                    continue
                }
                do {
                    if first || last == nil {
                        let totals = try connection.request(.totals, as: CoinMechModel.Totals.self)
                        value = CoinMechModel.Totals.value(of: totals.current)
                        if !common.json {
                            print("totals since the last collection: \(Format.values(value))")
                            fflush(nil)
                        }
                    }
                    let reply = try connection.request(.subscribe(since: last, pending: pending), as: SubscribeReply.self)
                    if last == nil { last = reply.since }
                    first = false
                    reading: while true {
                        // Read as its type; printed with --json as the daemon wrote it.
                        guard let text = try connection.nextEvent(timeout: 3600) else { continue }
                        let event: LedgerEvent
                        switch try SubscriptionMessage.read(text) {
                        case .event(let read):
                            event = read
                        case .overflow(let resumeFrom):
                            FileHandle.standardError.write(Data("coinctl: fell behind; resuming after #\(resumeFrom)\n".utf8))
                            last = resumeFrom
                            break reading
                        }
                        last = event.seq
                        // Money is what the mech stored: `coin` events.
                        if event.kind == EventKind.coin.rawValue, let currency = event.currency, let amount = event.valueMinor {
                            value[currency, default: 0] += amount
                        }
                        if event.kind == EventKind.collect.rawValue { value = [:] }
                        if event.kind == EventKind.payoutRequested.rawValue, let detail = event.detailJSON,
                           let id = detail["request_id"]?.string, let currency = detail["currency"]?.string {
                            payoutCurrencies[id] = currency
                        }
                        if common.json {
                            print((text["event"] ?? event.json).description)
                        } else {
                            print(Format.event(event, totals: value, payoutCurrencies: payoutCurrencies))
                        }
                        fflush(nil)
                    }
                } catch ClientError.closed {
                    FileHandle.standardError.write(Data("coinctl: connection lost; reconnecting\n".utf8))
                    sleep(1)
                } catch {
                    throw fail(error)
                }
            }
        }
    }
}
