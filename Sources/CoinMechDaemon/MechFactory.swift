import CoinMechCCTalk
import CoinMechConfiguration
import CoinMechFailpoints
import CoinMechGPIO
import CoinMechModel
import CoinMechSources

/// Builds the mech a source configuration names, and says how its coins become credit.
/// `persisted`, `remembered` and `positions` are a ccTalk acceptor's: its counter on the ledger,
/// who the ledger last identified at its address, the coin positions the operator allows and the
/// coin ids the chain credits.
enum MechFactory {
    static func make(_ source: SourceConfiguration, lastDeviceSeq: UInt64?, persisted: CCTalkCounterState?, remembered: CCTalkDeviceIdentity?,
                     positions: CoinPositionMask, creditableCoinIDs: Set<String>?,
                     failpoints: Failpoints) -> (mech: any Mech, credit: CreditRule) {
        switch source.kind {
        case .serial(let serial):
            let mech = SerialMech(path: serial.device, baud: serial.baud, confirmsCoins: serial.confirmations, failpoints: failpoints)
            mech.followsDevnode = serial.followsDevnode
            return (mech, serial.confirmations ? .onConfirmation : .atOnce)
        case .gpio(let gpio):
            let input = GPIOEdgeInput(
                chip: gpio.chip, lines: gpio.decoding.inputLines, acceptGate: gpio.acceptGate.map { ($0.line, $0.pulseMilliseconds) },
                inhibit: gpio.inhibit.map { ($0.line, $0.activeLow) }, scale: gpio.scale.map { ($0.data, $0.clock, $0.decoder) })
            // A pulse is the mech's own report of a coin it took; a light gate has no cash-box sensor (yet).
            return (GPIOMech(input: input, decoder: gpio.decoding.decoder, lastDeviceSeq: lastDeviceSeq), .atOnce)
        case .cctalk(let cctalk):
            // The acceptor took the coin before it said so: its credit is the ledger's, at once.
            var host = cctalk.hostConfiguration
            host.allowed = positions  // from the first identification on
            host.creditableCoinIDs = creditableCoinIDs
            return (CCTalkMech(path: cctalk.device, host: host, persisted: persisted, remembered: remembered), .atOnce)
        case .gpioReplay(let replay):
            return (GPIOMech(input: ReplayEdgeInput(path: replay.file, speed: replay.speed), decoder: replay.decoding.decoder,
                             lastDeviceSeq: lastDeviceSeq), .atOnce)
        }
    }
}

extension SourceConfiguration.Decoding {
    /// A fresh decoder for the mech's edges.
    var decoder: any CoinDecoder {
        switch self {
        case .pulse(let settings): PulseDecoder(settings: settings)
        case .gates(let settings): LightGateDecoder(settings: settings)
        }
    }
}
