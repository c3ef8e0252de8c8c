/// Why the crash suite could not run or found money wrong, said so a person can act on it.
struct CrashSuiteError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
