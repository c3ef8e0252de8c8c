import CoinMechCCTalk
import CoinMechModel

extension AcceptorEvent {
    /// What the money rules act on of a ccTalk host's event; nil for what only logs and status
    /// show (configured, not responding, refused, line errors).
    public init?(_ event: CCTalkHostEvent) {
        switch event {
        case .batch(let batch):
            self = .batch(AcceptorBatch(batch))
        case .identified(let identity):
            let coins = identity.coinIDs.keys.sorted().map { "\($0)=\(identity.coinIDs[$0]!.text)" }.joined(separator: ",")
            self = .note(.identified(manufacturer: identity.manufacturer ?? "", product: identity.productCode ?? "",
                                     serialNumber: identity.serialNumber, software: identity.softwareRevision ?? "", coins: coins))
        case .fault(let code, let extra):
            self = .note(.fault(code: code.code, name: code.name, message: code.message, extra: extra))
        case .faultCleared:
            self = .note(.faultCleared)
        case .configured, .notResponding, .responding, .refused, .malformedReply, .lineError, .notACoinAcceptor, .deviceAnswer:
            return nil
        }
    }
}

extension AcceptorBatch {
    /// A ccTalk buffer read as the money rules take it.
    public init(_ batch: CCTalkLedgerBatch) {
        self.init(before: batch.before.map(AcceptorCounter.init), after: AcceptorCounter(batch.after), entries: batch.entries.map(Entry.init))
    }
}

extension AcceptorBatch.Entry {
    init(_ entry: CCTalkLedgerEntry) {
        switch entry {
        case .credit(let event):
            self = .credit(AcceptorCredit(epoch: event.epoch, number: event.number, position: Int(event.result.a),
                                          coinID: event.coinID?.text, sorterPath: event.result.b))
        case .error(let event, let error):
            self = .record(.error(epoch: event.epoch, number: event.number, code: error.code, name: error.name, message: error.message,
                                  rejected: error.rejection.rawValue))
        case .invalid(let event):
            self = .record(.invalid(epoch: event.epoch, number: event.number, a: event.result.a, b: event.result.b))
        case .backlog(let event):
            self = .record(.backlog(epoch: event.epoch, number: event.number, a: event.result.a, b: event.result.b, coinID: event.coinID?.text))
        case .lost(let epoch, let numbers):
            self = .record(.lost(epoch: epoch, first: numbers.lowerBound, last: numbers.upperBound))
        case .restarted(let epoch, let cause):
            self = .record(.restarted(epoch: epoch, cause: cause.description))
        }
    }
}

extension AcceptorCounter {
    /// The ccTalk host's counter state as the ledger's row.
    public init(_ state: CCTalkCounterState) {
        self.init(epoch: state.epoch, eventNumber: state.eventNumber, lastResults: state.lastResults, serialNumber: state.serialNumber,
                  expectsRestart: state.expectsRestart)
    }
}

extension CCTalkCounterState {
    /// The engine's state from the ledger's row.
    public init(_ row: AcceptorCounter) {
        self.init(epoch: row.epoch, eventNumber: row.eventNumber, lastResults: row.lastResults, serialNumber: row.serialNumber,
                  expectsRestart: row.expectsRestart)
    }
}
