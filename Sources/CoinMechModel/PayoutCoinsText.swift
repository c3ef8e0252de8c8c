/// Coins per coin type as the ledger's detail writes them: `type:count` by type, comma
/// separated (`0:2,3:1`); empty for none.
public enum PayoutCoinsText {
    public static func text(_ coins: [Int: Int]) -> String {
        coins.filter { $0.value != 0 }.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
    }

    /// Nil for text that is not such a list.
    public static func parse(_ text: String) -> [Int: Int]? {
        var coins: [Int: Int] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: ":")
            guard parts.count == 2, let type = Int(parts[0]), let count = Int(parts[1]) else { return nil }
            coins[type, default: 0] += count
        }
        return coins
    }
}
