/// Why the run could not be made (not a finding about delivery): exit status 2.
struct ChaosError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
