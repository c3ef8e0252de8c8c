import CoinMechProtocol
import Testing

/// The one-pass JSON reader (`JSONFastReader`): where it answers, it answers as the decoder
/// does; the rest it leaves to the decoder. Expected values come from the decoder itself
/// (`JSON.decoded`), the authority it is held to, and the `request` fuzz target compares the
/// two on every input.
@Suite("JSON: the one-pass reader reads as the decoder does, and leaves it the rest")
struct JSONFastReaderTests {
    /// Inputs of the contract's shape, and corners of the grammar.
    static let read: [String] = [
        #"{"v":1,"cabinet":"c-1","site":"s","seq":7,"published":1795290000.123456,"event":{"seq":7,"time":1795290000.5,"kind":"coin","value_minor":25,"ok":true,"none":null,"list":[1,2.5,"x",[],{}]}}"#,
        #"  { "a" : [ 1 , -2 , 3.0 , -0 , 0 , 1e2 , 2.5E-3 , -1.5e+2 , 0.1e1 ] }  "#,
        #""plain""#, "5", "-7", "true", "false", "null", "[]", "{}", "2.0", "123456789012345678", "-123456789012345678",
        #"{"escaped":"a\"b\\c\/d\be\ff\ng\rh\ti"}"#, #"{"uni":"café ✓ 😀"}"#, "9007199254740991.0", "4503599627370496.5",
        #"{"nested":{"a":{"b":{"c":[[[1]]]}}}}"#, "0.000001", "1e-7", "\t\n\r 42 \n",
    ]

    /// Left to the decoder (nil from the reader), whatever the decoder then makes of them.
    static let left: [String] = [
        #"{"u":"\u00e9"}"#, #"{"a":1,"a":2}"#, "1234567890123456789", "9007199254740993.0", "1e400", "01", "1.", ".5", "-", "+1",
        "[1,]", #"{"a":1,}"#, "[1 2]", "tru", "nul", #""unterminated"#, "\"tab\there\"", "{} x", "", "   ", "NaN", "Infinity",
        #"{"a"}"#, #"{1:2}"#, "[" + String(repeating: "[", count: 70) + String(repeating: "]", count: 71),
    ]

    @Test("each value it reads equals the decoder's", arguments: read)
    func sameAsDecoder(_ text: String) {
        let fast = JSONFastReader.read(text)
        #expect(fast != nil, "not read: \(text)")
        #expect(fast == JSON.decoded(text))
        #expect(JSON.parse(text) == JSON.decoded(text))
    }

    @Test("the rest it leaves to the decoder, and JSON.parse answers as the decoder", arguments: left)
    func leftToDecoder(_ text: String) {
        #expect(JSONFastReader.read(text) == nil)
        #expect(JSON.parse(text) == JSON.decoded(text))
    }

    @Test("a whole number written with a fraction or an exponent is an int, a fraction a double")
    func numbers() {
        #expect(JSONFastReader.read("2.0") == .int(2))
        #expect(JSONFastReader.read("1e2") == .int(100))
        #expect(JSONFastReader.read("2.5") == .double(2.5))
        #expect(JSONFastReader.read("-0") == .int(0))
    }
}
