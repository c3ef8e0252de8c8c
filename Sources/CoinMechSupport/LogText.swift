/// Text from outside (a cabinet's payload, a name typed at a login form) made safe for one log
/// line: quoted, control characters, quotes and backslashes escaped, cut to `limit` characters.
/// A newline in a name must not forge a line of the journal, nor a megabyte fill it.
public enum LogText {
    public static func quoted(_ text: some StringProtocol, limit: Int = 200) -> String {
        var out = "\""
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < limit else {
                out += "…"
                break
            }
            count += 1
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                // C0 and C1 controls, the line and paragraph separators, and bidirectional
                // overrides, which can make a line read as another.
                if scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format
                    || scalar.properties.generalCategory == .lineSeparator || scalar.properties.generalCategory == .paragraphSeparator {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
