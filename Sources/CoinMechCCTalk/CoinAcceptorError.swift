/// An error event of a coin acceptor's credit buffer (header 229, result A = 0, B = this code),
/// named as the ccTalk Generic Specification names it (part 3, table 2).
///
/// None of them is credit: a coin is credit only through a credit event (A = 1–16).
public struct CoinAcceptorError: Sendable, Hashable, CustomStringConvertible {
    /// Whether the coin concerned went back to the customer: the specification's "coin
    /// rejected?" column.
    public enum Rejection: String, Sendable, Hashable {
        /// The coin was returned.
        case yes
        /// The event is an alarm, not about a coin being returned (fraud, a sensor, a setting).
        case no
        /// It may or may not have been returned (a jam: it may still be inside).
        case possibly
    }

    public let code: UInt8

    public init(code: UInt8) { self.code = code }

    /// The specification's name, e.g. "Coin going backwards".
    public var name: String { Self.entry(code).name }

    /// Whether the coin went back to the customer.
    public var rejection: Rejection { Self.entry(code).rejection }

    /// What it means and what to do, for the operator.
    public var message: String { Self.entry(code).message }

    /// The acceptor takes no more coins until someone clears it: a blocked sensor or an open
    /// flight deck. The host asks for a self-check and shows the fault in `status`.
    public var stopsAcceptance: Bool { [14, 15, 26, 32, 254].contains(code) }

    /// A snake_case name for logs and ledger details, e.g. `coin_going_backwards`.
    public var identifier: String {
        var words = ""
        for character in name.lowercased() {
            if character.isLetter || character.isNumber {
                words.append(character)
            } else if !words.isEmpty && words.last != "_" {
                words.append("_")
            }
        }
        while words.last == "_" { words.removeLast() }
        return words
    }

    public var description: String { "error \(code) (\(name)): \(message)" }

    private struct Entry {
        let name: String
        let rejection: Rejection
        let message: String
    }

    private static func entry(_ code: UInt8) -> Entry {
        switch code {
        case 0: Entry(name: "Null event", rejection: .no, message: "no error")
        case 1: Entry(name: "Reject coin", rejection: .yes, message: "the coin matched no programmed coin and was returned")
        case 2: Entry(name: "Inhibited coin", rejection: .yes,
                      message: "a known coin whose position is inhibited (or the acceptor inhibited itself) was returned")
        case 3: Entry(name: "Multiple window", rejection: .yes, message: "the coin matched more than one enabled coin and was returned")
        case 4: Entry(name: "Wake-up timeout", rejection: .possibly,
                      message: "a coin entered but never reached the validation sensor: possible jam at the entry")
        case 5: Entry(name: "Validation timeout", rejection: .possibly,
                      message: "a coin entered the validation area and did not leave it: possible jam")
        case 6: Entry(name: "Credit sensor timeout", rejection: .possibly,
                      message: "a coin validated as genuine never reached the credit sensor: no credit; possible jam after the gate")
        case 7: Entry(name: "Sorter opto timeout", rejection: .no,
                      message: "a coin went into the sorter and was not seen leaving it: possible jam in the sorter")
        case 8: Entry(name: "2nd close coin error", rejection: .yes,
                      message: "a coin followed the previous one too closely; one or both were returned")
        case 9: Entry(name: "Accept gate not ready", rejection: .yes,
                      message: "coins inserted too quickly: the gate was still working for the previous coin")
        case 10: Entry(name: "Credit sensor not ready", rejection: .yes,
                       message: "coins inserted too quickly: the previous coin was still on the credit sensor")
        case 11: Entry(name: "Sorter not ready", rejection: .yes,
                       message: "coins inserted too quickly: the sorter flaps were still moving for the previous coin")
        case 12: Entry(name: "Reject coin not cleared", rejection: .yes,
                       message: "coins inserted too quickly: a returned coin had not left the acceptor yet")
        case 13: Entry(name: "Validation sensor not ready", rejection: .yes,
                       message: "the validation sensors were not ready: a developing fault; check the acceptor")
        case 14: Entry(name: "Credit sensor blocked", rejection: .yes,
                       message: "the credit sensor is permanently blocked: the acceptor takes no coins until it is cleared")
        case 15: Entry(name: "Sorter opto blocked", rejection: .yes,
                       message: "the sorter exit sensor is permanently blocked: the acceptor takes no coins until it is cleared")
        case 16: Entry(name: "Credit sequence error", rejection: .no,
                       message: "something went backwards through the credit sensor: possible fraud attempt")
        case 17: Entry(name: "Coin going backwards", rejection: .no, message: "a coin went backwards through the acceptor: possible fraud attempt")
        case 18: Entry(name: "Coin too fast (over credit sensor)", rejection: .no,
                       message: "a coin crossed the credit sensor too fast: possible fraud attempt")
        case 19: Entry(name: "Coin too slow (over credit sensor)", rejection: .no,
                       message: "a coin crossed the credit sensor too slowly: possible fraud attempt")
        case 20: Entry(name: "C.O.S. mechanism activated (coin-on-string)", rejection: .no,
                       message: "the coin-on-string sensor tripped: fraud attempt")
        case 21: Entry(name: "D.C.E. opto timeout", rejection: .possibly,
                       message: "a coin seen in the dual coin entry chute never reached validation: possible jam")
        case 22: Entry(name: "D.C.E. opto not seen", rejection: .yes,
                       message: "a coin reached validation without passing the entry chute sensor: possible fraud attempt")
        case 23: Entry(name: "Credit sensor reached too early", rejection: .no,
                       message: "a coin reached the credit sensor sooner than a coin can: possible fraud attempt")
        case 24: Entry(name: "Reject coin (repeated sequential trip)", rejection: .yes,
                       message: "many coins in a row were rejected: possible fraud attempt")
        case 25: Entry(name: "Reject slug", rejection: .yes, message: "a known slug was recognised and returned")
        case 26: Entry(name: "Reject sensor blocked", rejection: .no,
                       message: "the reject sensor is permanently blocked: the acceptor takes no coins until it is cleared")
        case 27: Entry(name: "Games overload", rejection: .no, message: "totaliser mode: a game value is set too low; fix the acceptor's setup")
        case 28: Entry(name: "Max. coin meter pulses exceeded", rejection: .no,
                       message: "totaliser mode: a meter value is set too low; fix the acceptor's setup")
        case 29: Entry(name: "Accept gate open not closed", rejection: .no,
                       message: "the accept gate was forced open when it should be closed: tampering or a mechanical fault")
        case 30: Entry(name: "Accept gate closed not open", rejection: .yes,
                       message: "the accept gate did not open when driven: mechanical or electrical fault")
        case 31: Entry(name: "Manifold opto timeout", rejection: .no,
                       message: "a coin went into the manifold and was not seen leaving it: possible jam")
        case 32: Entry(name: "Manifold opto blocked", rejection: .yes,
                       message: "the manifold sensor is permanently blocked: the acceptor takes no coins until it is cleared")
        case 33: Entry(name: "Manifold not ready", rejection: .yes,
                       message: "coins inserted too quickly: the manifold flap was still moving")
        case 34: Entry(name: "Security status changed", rejection: .possibly,
                       message: "the acceptor tightened its acceptance after detecting fraud (see header 180)")
        case 35: Entry(name: "Motor exception", rejection: .possibly, message: "the acceptor's motor has a problem: jam or mechanical failure")
        case 36: Entry(name: "Swallowed coin", rejection: .no,
                       message: "a coin that should have been returned reached the credit sensor; its value is unknown: gate stuck open or tampering")
        case 37: Entry(name: "Coin too fast (over validation sensor)", rejection: .yes,
                       message: "a coin crossed the validation sensor too fast: possible fraud attempt")
        case 38: Entry(name: "Coin too slow (over validation sensor)", rejection: .yes,
                       message: "a coin crossed the validation sensor too slowly: possible fraud attempt")
        case 39: Entry(name: "Coin incorrectly sorted", rejection: .no, message: "an accepted coin went down the wrong sorter path: possible hardware fault")
        case 40: Entry(name: "External light attack", rejection: .no, message: "a sensor saw outside light: possible attack on the optical sensors")
        case 128...159: Entry(name: "Inhibited coin (type \(code - 127))", rejection: .yes,
                              message: "a coin of inhibited type \(code - 127) was returned")
        case 160...191: Entry(name: "Reserved for credit cancelling", rejection: .possibly,
                              message: "a manufacturer's credit-cancelling code (\(code)): see the acceptor's manual")
        case 253: Entry(name: "Data block request", rejection: .no, message: "the acceptor asks the host for attention (unused by CoinMech)")
        case 254: Entry(name: "Coin return mechanism activated (flight deck open)", rejection: .no,
                        message: "the flight deck was opened to clear a jam: the acceptor takes no coins until it is closed")
        case 255: Entry(name: "Unspecified alarm code", rejection: .possibly, message: "an alarm the specification does not name: see the acceptor's manual")
        default: Entry(name: "Unknown error code \(code)", rejection: .possibly,
                       message: "a code this version of CoinMech does not know (\(code)): see the acceptor's manual")
        }
    }
}
