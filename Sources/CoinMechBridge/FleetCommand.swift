import CoinMechProtocol

/// A command from the fleet on `cmd/<name>` (docs/FLEET.md, "Commands"), checked: a name of
/// v1, its arguments, the id its reply goes to and the deadline after which it must not start.
public struct FleetCommand: Sendable, Equatable {
    /// The commands of v1. `collect` and teach mode are not among them: they need someone at
    /// the cabinet.
    public enum Name: String, Sendable, CaseIterable, Comparable {
        case status, totals, inhibit, reload, resend
        public static func < (a: Name, b: Name) -> Bool { a.rawValue < b.rawValue }
    }

    public enum Action: Sendable, Equatable {
        case status
        case totals
        case inhibit(Bool)
        case reload
        /// Seqs `from` … `to` published again; `to` nil: up to the daemon's last seq.
        case resend(from: Int64, to: Int64?)
    }

    /// Why a command is refused or failed: the reply's `error`.
    public struct Failure: Sendable, Equatable, Error {
        public var code: String
        public var message: String
        public init(_ code: String, _ message: String) {
            self.code = code
            self.message = message
        }
    }

    public var id: String
    public var name: Name
    public var action: Action
    public var deadline: Double
    public var by: String?

    public init(id: String, name: Name, action: Action, deadline: Double, by: String?) {
        self.id = id
        self.name = name
        self.action = action
        self.deadline = deadline
        self.by = by
    }

    /// An id names its reply's topic level: 1 to 64 of `A-Z a-z 0-9 _ -`.
    public static func isID(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy {
            (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }

    /// The action `name` asks for with `args`, or why not (`bad_request`, `unknown_command`).
    static func action(_ name: String, _ args: [String: JSON]) -> Result<(Name, Action), Failure> {
        guard let known = Name(rawValue: name) else {
            let names = Name.allCases.map(\.rawValue).joined(separator: ", ")
            return .failure(Failure("unknown_command", "'\(name)' is not a command of v1 (known: \(names))"))
        }
        func unexpected(_ allowed: Set<String>) -> Failure? {
            let extra = Set(args.keys).subtracting(allowed).sorted()
            return extra.isEmpty ? nil : Failure("bad_request", "\(name) takes no argument \(extra.joined(separator: ", "))")
        }
        switch known {
        case .status, .totals, .reload:
            if let failure = unexpected([]) { return .failure(failure) }
            return .success((known, known == .status ? .status : known == .totals ? .totals : .reload))
        case .inhibit:
            if let failure = unexpected(["on"]) { return .failure(failure) }
            guard let on = args["on"]?.bool else { return .failure(Failure("bad_request", "inhibit needs args.on, true or false")) }
            return .success((known, .inhibit(on)))
        case .resend:
            if let failure = unexpected(["from", "to"]) { return .failure(failure) }
            guard let from = args["from"]?.int, from >= 1 else { return .failure(Failure("bad_request", "resend needs args.from, an integer of at least 1")) }
            var to: Int64?
            if let given = args["to"], given != .null {
                guard let value = given.int, value >= from else { return .failure(Failure("bad_request", "resend's args.to must be an integer of at least from (\(from))")) }
                to = value
            }
            return .success((known, .resend(from: from, to: to)))
        }
    }
}
