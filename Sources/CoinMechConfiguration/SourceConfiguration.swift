import CoinFacts
import CoinMechCore
import CoinMechGPIO
import CoinMechHotplug
import CoinMechModel

/// Where readings come from, as the configuration's `source` table says (docs/CONFIG.md):
/// one case per kind of mech, each with only what that kind needs.
public struct SourceConfiguration: Sendable, Equatable {
    /// Name recorded in the ledger with each reading.
    public var name: String
    public var kind: Kind
    /// Which udev device is the mech (default: the serial device's path, or the chip's label).
    public var hotplug: DeviceMatch?
    /// The mech's answer deadline (serial: 50 ms unless set; GPIO mechs: none unless set).
    public var answerDeadline: AnswerDeadline?
    /// The coins this cabinet takes (`currencies`, `tokens`): no accept outside them is credited.
    public var coins: CabinetCoins = .allMint
    /// Whether `currencies` was configured (else every mint currency is taken, with a warning).
    public var currenciesConfigured = false

    public init(name: String, kind: Kind, hotplug: DeviceMatch? = nil, answerDeadline: AnswerDeadline? = nil) {
        self.name = name
        self.kind = kind
        self.hotplug = hotplug
        self.answerDeadline = answerDeadline
    }

    public enum Kind: Sendable, Equatable {
        /// A raw-sensor mech on a serial line (`$CMR`/`$CMD`, docs/PROTOCOL.md part two).
        case serial(Serial)
        /// A pulse or light-gate mech on GPIO lines (libgpiod).
        case gpio(GPIO)
        /// A recorded GPIO edge stream, played back.
        case gpioReplay(Replay)
        /// A ccTalk coin acceptor: it classifies and takes coins itself (docs/PROTOCOL.md part three).
        case cctalk(CCTalk)

        /// The configuration's name for it.
        public var name: String {
            switch self {
            case .serial: "serial"
            case .gpio: "gpio"
            case .gpioReplay: "gpio-replay"
            case .cctalk: "cctalk"
            }
        }
    }

    public struct Serial: Sendable, Equatable {
        public var device: String
        public var baud: Int
        /// The mech speaks protocol 2 and confirms each accepted coin: credit on its word.
        public var confirmations = true
        /// How long the mech takes at most to store or return an accepted coin.
        public var confirmationWindow: Duration = .seconds(1)
        /// Follow udev's device node (the match is by USB identity, not by path).
        public var followsDevnode = false

        public init(device: String, baud: Int) {
            self.device = device
            self.baud = baud
        }
    }

    /// How a GPIO mech's edges become coins.
    public enum Decoding: Sendable, Equatable {
        case pulse(PulseDecoder.Settings)
        case gates(LightGateDecoder.Settings)

        /// The input lines the decoder reads.
        public var inputLines: [UInt32] {
            switch self {
            case .pulse(let settings): [settings.line]
            case .gates(let settings): [settings.gateA, settings.gateB]
            }
        }
    }

    public struct GPIO: Sendable, Equatable {
        public var chip: String
        public var decoding: Decoding
        public var acceptGate: Output?
        public var inhibit: Output?
        /// An HX711 load cell under a light-gate mech.
        public var scale: Scale?

        public init(chip: String, decoding: Decoding) {
            self.chip = chip
            self.decoding = decoding
        }
    }

    public struct Replay: Sendable, Equatable {
        public var file: String
        /// 2 = twice as fast as recorded.
        public var speed: Double
        public var decoding: Decoding
    }

    /// An output line: the accept gate (pulsed) or the inhibit line (held).
    public struct Output: Sendable, Equatable {
        public var line: UInt32
        public var pulseMilliseconds: Double
        public var activeLow: Bool
    }

    public struct Scale: Sendable, Equatable {
        public var data: UInt32
        public var clock: UInt32
        public var decoder: HX711Decoder
    }

    /// Where the mech is, for status.
    public var device: String {
        switch kind {
        case .serial(let serial): serial.device
        case .gpio(let gpio): gpio.chip
        case .gpioReplay(let replay): replay.file
        case .cctalk(let cctalk): cctalk.device
        }
    }

    /// How long the mech takes at most to confirm an accepted coin (serial), else the default.
    public var confirmationWindow: Duration {
        if case .serial(let serial) = kind { return serial.confirmationWindow }
        return .seconds(1)
    }
}
