/// What a device's self-check found (header 232), named as the ccTalk Generic Specification
/// names it (table 3). Any code but 0 is a fault: the device inhibits itself until it clears.
public struct CCTalkFaultCode: Sendable, Hashable, CustomStringConvertible {
    public let code: UInt8

    public init(code: UInt8) { self.code = code }

    public static let ok = CCTalkFaultCode(code: 0)

    public var isFault: Bool { code != 0 }

    /// The specification's name, e.g. "Fault on credit sensor".
    public var name: String { Self.entry(code).name }

    /// What it means and what to do.
    public var message: String { Self.entry(code).message }

    public var description: String { code == 0 ? "OK" : "fault \(code) (\(name)): \(message)" }

    private static func entry(_ code: UInt8) -> (name: String, message: String) {
        switch code {
        case 0: ("OK", "no fault")
        case 1: ("EEPROM checksum corrupted", "the coin data's checksum does not match: reprogram or replace the acceptor")
        case 2: ("Fault on inductive coils", "the validation coils failed (extra byte: coil number): service the acceptor")
        case 3: ("Fault on credit sensor", "the credit sensor failed: no coin can be credited until it is repaired")
        case 4: ("Fault on piezo sensor", "the piezo (slug) sensor failed: service the acceptor")
        case 5: ("Fault on reflective sensor", "an opto-reflective validation sensor failed: service the acceptor")
        case 6: ("Fault on diameter sensor", "the diameter sensor failed: service the acceptor")
        case 7: ("Fault on wake-up sensor", "the wake-up sensor failed: service the acceptor")
        case 8: ("Fault on sorter exit sensors", "a sorter exit sensor failed (extra byte: sensor number): service the sorter")
        case 9: ("NVRAM checksum corrupted", "the battery-backed memory is corrupt: service the acceptor")
        case 10: ("Coin dispensing error", "a hopper dispense failed (obsolete code)")
        case 11: ("Low level sensor error", "a hopper low level sensor failed (obsolete code)")
        case 12: ("High level sensor error", "a hopper high level sensor failed (obsolete code)")
        case 13: ("Coin counting error", "a hopper count went wrong (obsolete code)")
        case 14: ("Keypad error", "a key failed (extra byte: key number)")
        case 15: ("Button error", "a button failed")
        case 16: ("Display error", "a display failed")
        case 17: ("Coin auditing error", "the acceptor's coin audit memory is corrupt")
        case 18: ("Fault on reject sensor", "the reject sensor failed: service the acceptor")
        case 19: ("Fault on coin return mechanism", "the flight deck mechanism failed: service the acceptor")
        case 20: ("Fault on C.O.S. mechanism", "the coin-on-string sensor failed: service the acceptor")
        case 21: ("Fault on rim sensor", "the rim sensor failed: service the acceptor")
        case 22: ("Fault on thermistor", "the temperature sensor failed: service the acceptor")
        case 23: ("Payout motor fault", "a hopper motor failed (extra byte: hopper number)")
        case 24: ("Payout timeout", "a dispensed coin was not seen (obsolete code)")
        case 25: ("Payout jammed", "a hopper jammed (obsolete code)")
        case 26: ("Payout sensor fault", "a payout sensor failed (extra byte: hopper number)")
        case 27: ("Level sensor error", "a hopper level sensor failed (extra byte: hopper number)")
        case 28: ("Personality module not fitted", "fit the acceptor's personality or configuration module")
        case 29: ("Personality checksum corrupted", "the personality module's data is corrupt: replace it")
        case 30: ("ROM checksum mismatch", "the firmware is corrupt: reflash or replace the acceptor")
        case 31: ("Missing slave device", "an attached slave device is missing (extra byte: its address)")
        case 32: ("Internal comms bad", "the device cannot reach an internal part (extra byte: its address)")
        case 33: ("Supply voltage outside operating limits", "check the power supply's voltage")
        case 34: ("Temperature outside operating limits", "the acceptor is too hot or too cold")
        case 35: ("D.C.E. fault", "the dual coin entry chute failed (extra byte: 1 coin, 2 token)")
        case 36: ("Fault on bill validation sensor", "a bill validator sensor failed")
        case 37: ("Fault on bill transport motor", "the bill transport motor failed")
        case 38: ("Fault on stacker", "the bill stacker failed")
        case 39: ("Bill jammed", "a bill is stuck in the validator")
        case 40: ("RAM test fail", "the device's memory test failed: replace it")
        case 41: ("Fault on string sensor", "the bill-on-a-string sensor failed")
        case 42: ("Accept gate failed open", "the accept gate is stuck open (jam or tampering): coins may fall in uncredited")
        case 43: ("Accept gate failed closed", "the accept gate is stuck closed (solenoid open circuit): every coin is returned")
        case 44: ("Stacker missing", "fit the stacker")
        case 45: ("Stacker full", "empty the stacker")
        case 46: ("Flash memory erase fail", "the last firmware erase failed: reflash")
        case 47: ("Flash memory write fail", "the last firmware write failed: reflash")
        case 48: ("Slave device not responding", "an attached device does not answer (extra byte: device number)")
        case 49: ("Fault on opto sensor", "an optical sensor failed (extra byte: opto number): clean or service it")
        case 50: ("Battery fault", "replace or recharge the device's battery")
        case 51: ("Door open", "close the door")
        case 52: ("Microswitch fault", "a microswitch failed")
        case 53: ("RTC fault", "the real-time clock failed")
        case 54: ("Firmware error", "the firmware found an error in itself: reflash or replace the device")
        case 55: ("Initialisation error", "the device failed to start up (extra byte: detail): power-cycle it")
        case 56: ("Supply current outside operating limits", "possible short or failed part: check the wiring and the device")
        case 57: ("Forced bootloader mode", "the device was forced into its bootloader: reflash and reset it")
        case 255: ("Unspecified fault code", "a fault the specification does not name (extra byte: manufacturer's code): see the manual")
        default: ("Unknown fault code \(code)", "a code this version of CoinMech does not know: see the device's manual")
        }
    }
}
