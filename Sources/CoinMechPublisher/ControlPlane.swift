import CoinMechProtocol

/// An error a command answers with.
public struct CommandError: Error, Sendable {
    public var code: ClientProtocol.ErrorCode
    public var message: String

    public init(_ code: ClientProtocol.ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// What the socket API asks of the daemon. Commands that change state complete on the
/// daemon's own schedule (the deciding loop runs them between batches).
public protocol ControlPlane: Sendable {
    /// Source state, inhibit, chain generation, counters, uptime.
    func status() -> JSON
    /// The links with plugin, version, sha256, load time and statistics.
    func chain() -> JSON
    /// Runs a control command (`command.name.isControl`: inhibit, collect, reload, teach
    /// start, commit and abort) for `peer`, who may use it; `completion` gets its result.
    func control(_ command: OperatorCommand, by peer: PeerCredentials, completion: @escaping @Sendable (Result<JSON, CommandError>) -> Void)
    /// Teach mode's figures so far: `{"teaching": false}` when not teaching.
    func teachStatus() -> JSON
    /// How each link of the running chain would judge a reading, from the links' own `explain`,
    /// asked between two readings on the deciding thread; nothing is decided or recorded.
    func explain(diameter: Double, weight: Double?, thickness: Double?, completion: @escaping @Sendable (Result<JSON, CommandError>) -> Void)
    /// How the changer would pay an amount from its tubes as it last counted them, or the
    /// nearest amounts it can pay; nothing moves.
    func payoutPlan(amountMinor: Int64, currency: String?) throws(CommandError) -> JSON
    /// The customer's credit as the ledger holds it (a ledger read, off the deciding thread).
    func credit() throws(CommandError) -> JSON
}
