import CLinux
import CoinMechModel
import CoinMechSupport

#if canImport(Glibc)
import Glibc
#endif

/// Plays a raw-sensor serial mech (`SimulatedMech`) on a pseudo-terminal, from a scenario or a
/// recorded trace, and reports the ground truth: `coinsim`.
///
/// The shell owns what the model cannot: the pty (and its symlink), the signals, the frame log
/// and the clock. It is single-threaded: one `ppoll` over the pty and a signalfd until the
/// model's next due time, then the model is told what happened and its effects are carried out.
public final class MechSimulator {
    public typealias Options = SimulatorOptions

    private let options: Options
    private var mech: SimulatedMech
    private let announce: @Sendable (String) -> Void
    private var terminal: PseudoTerminal?
    private var recorder: TraceWriter?

    public init(scenario: Scenario, options: Options = Options(), announce: @escaping @Sendable (String) -> Void) {
        self.options = options
        mech = SimulatedMech(scenario: scenario, options: options, start: Instant.now.nanoseconds)
        self.announce = announce
    }

    public init(trace: [TraceEntry], name: String, deadlineMilliseconds: Double = 50, options: Options = Options(),
                announce: @escaping @Sendable (String) -> Void) {
        self.options = options
        mech = SimulatedMech(trace: trace, name: name, deadlineMilliseconds: deadlineMilliseconds, options: options,
                          start: Instant.now.nanoseconds)
        self.announce = announce
    }

    /// Runs the session to its end (or SIGTERM/SIGINT) and returns the ground truth.
    public func run() throws(SimulatorError) -> GroundTruth {
        let signals = try SimulatorSignals()
        if let path = options.recordPath { recorder = try TraceWriter(path: path) }
        try plugIn()

        while !mech.isFinished {
            let now = Instant.now.nanoseconds
            let turn = try signals.wait(master: terminal?.master, until: mech.nextWake(now: now), now: now)
            let woke = Instant.now.nanoseconds
            if turn.stop { mech.stop(at: woke) }
            if turn.readable, let bytes = terminal?.read() { mech.received(bytes, at: woke) }
            if turn.hungUp {
                mech.hostHungUp(at: woke)
                // Hang-up is reported at once on every poll while nobody has the device open.
                usleep(5_000)
            } else if turn.open {
                mech.hostOpened(at: woke)
            }
            mech.advance(to: Instant.now.nanoseconds)
            try carryOut(mech.takeEffects())
        }
        try carryOut(mech.takeEffects())
        return mech.finish(at: Instant.now.nanoseconds)
    }

    private func carryOut(_ effects: [SimulatedMech.Effect]) throws(SimulatorError) {
        for effect in effects {
            switch effect {
            case .write(let bytes): _ = terminal?.write(bytes)
            case .record(let entry): recorder?.write(entry)
            case .unplug: unplug()
            case .plugIn: try plugIn()
            }
        }
    }

    private func plugIn() throws(SimulatorError) {
        let terminal = try PseudoTerminal()
        if let link = options.linkPath { try terminal.link(at: link) }
        self.terminal = terminal
        mech.offered(devicePath: terminal.devicePath)
        announce(terminal.devicePath)
    }

    /// Like a USB adapter's /dev/serial/by-id link, the link goes away with the device, so a
    /// host cannot reopen the old pty number (which the kernel may give to someone else).
    private func unplug() {
        if let link = options.linkPath { unlink(link) }
        terminal = nil
    }
}
