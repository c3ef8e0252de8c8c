import Yams

extension Node {
    /// The node's integer as Yams reads it, except YAML 1.1's base-60 form (`1:30`): Yams adds
    /// and multiplies its parts without an overflow check, so a long one (found by fuzzing,
    /// `coins: 66666666666666:2`) stopped the program instead of being refused. No setting here
    /// is written in base 60, so such a scalar is simply not a whole number.
    var wholeNumber: Int? {
        guard let scalar, !scalar.string.contains(":") else { return nil }
        return int
    }
}
