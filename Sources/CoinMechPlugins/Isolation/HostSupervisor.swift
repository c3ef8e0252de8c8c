import CLinux
import CoinMechChain
import CoinMechModel
import CoinMechPluginABI
import CoinMechSupport
import Foundation
import Synchronization

/// Runs one isolated link's plugin host: starts it, answers the deciding thread's calls through
/// it, and when it dies (a crash, a call over budget, a protocol error) reaps it and starts it
/// again after a back-off, or quarantines the link after too many crashes.
///
/// A thread of its own starts and reaps the hosts (a host gets SIGKILL when that thread ends);
/// the deciding thread talks to the live host directly, under `state`'s lock, which the
/// supervisor takes only briefly.
final class HostSupervisor: @unchecked Sendable {
    // @unchecked: everything mutable is in `state` (a Mutex) or belongs to the supervisor thread
    // (`history`, `nextStart`, touched only in `run()` and what it calls); the rest is set once.
    let link: String
    let file: PluginFile
    let configJSON: String
    let policy: LinkPolicy
    let user: HostUser?
    let executable: String
    let settings: IsolationSettings
    let identity: LinkIdentity
    let health: LinkHealth
    let quarantine: QuarantineStore?
    /// The daemon's own lines about this link (crashes, restarts, quarantine).
    let report: PluginLogSink
    /// The plugin's lines, forwarded from its host.
    let pluginLog: PluginLogSink
    private let wakeup = WakePipe()
    /// Signalled once the first start's outcome is in `state`.
    private let firstStartKnown = DispatchSemaphore(value: 0)
    private var history: CrashHistory
    private var nextStart: UInt64?
    /// Samples the live host's CPU against its calls' time (supervisor thread only).
    private var cpuWatch = CPUWatch()

    struct State: ~Copyable {
        /// The host that answers calls; nil while there is none.
        var live: HostProcess?
        /// Hosts that died or were killed, waiting to be reaped by the supervisor.
        var dying: [HostProcess] = []
        var nextID: UInt64 = 0
        /// Why the deciding thread gave up on the last host, for the supervisor's report.
        var failure: String?
        /// The forbidden system call that made it give up, if that was why.
        var violation: String?
        /// Why there is no live host, for the rejection of a reading meanwhile.
        var downReason = "its plugin host is starting"
        var stopping = false
        /// The first start's outcome, for the chain builder waiting in `start`.
        var firstStart: Result<HostWire.Ready, PluginLoadError>?
        /// Wall time of every call so far (the CPU watch's measure of what a host may use).
        var callNanoseconds: UInt64 = 0
    }

    let state: Mutex<State>
    /// The deciding thread's receive buffer: decisions and log lines.
    private nonisolated(unsafe) let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8192, alignment: 16)

    init(link: String, file: PluginFile, configJSON: String, policy: LinkPolicy, user: HostUser?, executable: String,
         settings: IsolationSettings, identity: LinkIdentity, health: LinkHealth, quarantine: QuarantineStore?,
         report: @escaping PluginLogSink, pluginLog: @escaping PluginLogSink) {
        self.link = link
        self.file = file
        self.configJSON = configJSON
        self.policy = policy
        self.user = user
        self.executable = executable
        self.settings = settings
        self.identity = identity
        self.health = health
        self.quarantine = quarantine
        self.report = report
        self.pluginLog = pluginLog
        history = CrashHistory(limit: settings.maxCrashes, window: settings.crashWindowSeconds)
        state = Mutex(State())
    }

    deinit {
        buffer.deallocate()
    }

    // MARK: Starting

    /// Starts the supervisor thread and waits for the first host to load the plugin and create
    /// the instance; throws what went wrong (and the thread ends) if it could not.
    func start() throws(PluginLoadError) -> HostWire.Ready {
        Thread.startNamed("host:\(link)") { [self] in run() }
        // `launch` gives up after the start timeout itself; the margin covers killing and reaping.
        guard firstStartKnown.wait(timeout: .now() + settings.startTimeoutSeconds + 5) == .success,
              let outcome = state.withLock({ $0.firstStart }) else {
            stop()
            throw .hostFailed(path: file.sourcePath, message: "the plugin host's supervisor did not answer")
        }
        return try outcome.get()
    }

    /// Asks the supervisor to shut the host down (it closes the channel: the host destroys the
    /// instance and exits) and end; returns at once.
    func stop() {
        state.withLock { $0.stopping = true }
        wakeup.wake()
    }

    private func run() {
        let first = launch()
        switch first {
        case .success(let (host, ready)):
            state.withLock {
                $0.live = host
                $0.firstStart = .success(ready)
            }
            firstStartKnown.signal()
            report(link, ready.sandbox.lacksRequired ? .warning : .info, "plugin host sandbox: \(ready.sandbox.layers)"
                + (ready.sandbox.missing.isEmpty ? "" : "; missing: " + ready.sandbox.missing.joined(separator: "; ")))
        case .failure(let error):
            state.withLock { $0.firstStart = .failure(error) }
            firstStartKnown.signal()
            return
        }
        while true {
            let (stopping, fds, live) = state.withLock { state in
                (state.stopping, ([state.live].compactMap { $0 } + state.dying).map { ($0.pidfd, $0.output) }, state.live != nil)
            }
            if stopping { return shutDown() }
            var descriptors = [pollfd(fd: wakeup.readEnd, events: Int16(POLLIN), revents: 0)]
            for (pidfd, output) in fds {
                descriptors.append(pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0))
                descriptors.append(pollfd(fd: output, events: Int16(POLLIN), revents: 0))
            }
            // A live host is sampled every CPU watch period.
            var timeout: Int32 = live ? Int32(CPUWatch.period / 1_000_000) : -1
            if !live, let next = nextStart {
                let now = Instant.now.nanoseconds
                timeout = next > now ? Int32(clamping: (next - now) / 1_000_000 + 1) : 0
            }
            _ = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if descriptors[0].revents != 0 { wakeup.drain() }
            forwardOutput()
            watchCPU()
            reapExited()
            if !state.withLock({ $0.live != nil || $0.stopping }), let next = nextStart, Instant.now.nanoseconds >= next {
                restart()
            }
        }
    }

    /// Spawns a host, hands it the plugin and waits until it is ready, failed or died.
    private func launch() -> Result<(HostProcess, HostWire.Ready), PluginLoadError> {
        let host: HostProcess
        do {
            host = try HostProcess.spawn(executable: executable, link: link, user: user)
        } catch {
            return .failure(error)
        }
        // A sealed in-memory copy: the private copy's directory is the daemon's alone (0700), and
        // a host running as another user opens what it is handed through /proc/self/fd.
        let source = open(file.copyPath, O_RDONLY | O_CLOEXEC)
        let plugin = source < 0 ? -1 : cm_sealed_copy(source, "coinmech-plugin-\(link)")
        let copyError = errno
        if source >= 0 { close(source) }
        guard plugin >= 0 else {
            host.kill()
            _ = host.reap(blocking: true)
            return .failure(.unreadable(path: file.copyPath, reason: String(cString: strerror(copyError))))
        }
        let load = HostWire.encode(.load, HostWire.Load(link: link, configJSON: configJSON, file: file, sandbox: policy.sandbox))
        let sent = load.withUnsafeBytes { cm_send_message(host.channel, $0.baseAddress, $0.count, plugin, 0) }
        close(plugin)
        guard sent == load.count else {
            host.kill()
            _ = host.reap(blocking: true)
            return .failure(.hostFailed(path: file.sourcePath, message: "cannot hand the plugin to its host: \(String(cString: strerror(errno)))"))
        }
        var message = [UInt8](repeating: 0, count: HostWire.maximumMessage)
        let began = Instant.now.nanoseconds
        let deadline = began + UInt64(settings.startTimeoutSeconds * 1e9)
        while true {
            let now = Instant.now.nanoseconds
            guard now < deadline else {
                host.kill()
                _ = host.reap(blocking: true)
                return .failure(.hostFailed(path: file.sourcePath, message: "did not load the plugin and create the instance within \(settings.startTimeoutSeconds) s"))
            }
            // Loading runs on one thread: more CPU than that is the plugin's threads spinning.
            if let cpu = host.cpuNanoseconds, CPUWatch.spinsWhileLoading(cpu: cpu, elapsed: now - began) {
                host.kill()
                _ = host.reap(blocking: true)
                forward(host.drainOutput())
                return .failure(.hostCrashed(path: file.sourcePath, message: "stopped while loading: it used \(cpu / 1_000_000) ms of CPU in \((now - began) / 1_000_000) ms, more than one thread can (the plugin's threads spin)"))
            }
            var descriptors = [pollfd(fd: host.channel, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeup.readEnd, events: Int16(POLLIN), revents: 0)]
            _ = poll(&descriptors, 2, Int32(clamping: min(deadline - now, CPUWatch.period) / 1_000_000 + 1))
            forward(host.drainOutput())
            if descriptors[1].revents != 0, state.withLock({ $0.stopping }) {
                host.kill()
                _ = host.reap(blocking: true)
                return .failure(.hostFailed(path: file.sourcePath, message: "stopped while starting"))
            }
            guard descriptors[0].revents != 0 else { continue }
            var fd: Int32 = -1
            let count = message.withUnsafeMutableBytes { cm_recv_message(host.channel, $0.baseAddress, $0.count, &fd, 1) }
            if fd >= 0 { close(fd) }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            guard count > 0 else {
                // The host closed its end: it died (or exited) while loading.
                let exit = host.reap(blocking: true) ?? "died"
                let output = host.drainOutput()
                forward(output)
                if let call = host.unreportedViolation { return .failure(.sandboxViolation(path: file.sourcePath, syscall: call)) }
                return .failure(.hostCrashed(path: file.sourcePath, message: "\(exit) while loading the plugin or creating the instance" + Self.lastLine(output)))
            }
            let outcome: Result<HostWire.Ready, PluginLoadError>? = message.withUnsafeBytes { raw in
                let received = UnsafeRawBufferPointer(rebasing: raw[..<count])
                switch HostWire.header(of: received)?.kind {
                case .log:
                    if let (level, text) = HostWire.logLine(of: received) { pluginLog(link, level, text) }
                    return nil
                case .ready:
                    guard let ready = HostWire.body(HostWire.Ready.self, of: received), ready.protocolVersion == HostWire.protocolVersion else {
                        return .failure(.hostFailed(path: file.sourcePath, message: "\(executable) speaks another host protocol than this coinmechd: install both from one build"))
                    }
                    return .success(ready)
                case .failed:
                    return .failure(HostWire.body(PluginLoadError.self, of: received)
                        ?? .hostFailed(path: file.sourcePath, message: "the plugin host failed and could not say why"))
                case .violation:
                    let call = HostProcess.forbiddenCall(in: received) ?? "an unknown call"
                    return .failure(.sandboxViolation(path: file.sourcePath, syscall: call))
                default:
                    return .failure(.hostFailed(path: file.sourcePath, message: "the plugin host sent an unexpected message while starting"))
                }
            }
            switch outcome {
            case nil: continue
            case .success(let ready)?: return .success((host, ready))
            case .failure(let error)?:
                host.kill()
                _ = host.reap(blocking: true)
                forward(host.drainOutput())
                return .failure(error)
            }
        }
    }

    /// A new host after a crash: it takes over, or its failure counts as another crash.
    private func restart() {
        nextStart = nil
        switch launch() {
        case .success(let (host, _)):
            let ready: Bool = state.withLock { state in
                guard !state.stopping else { return false }
                state.live = host
                return true
            }
            guard ready else { return }
            health.recovered()
            report(link, .info, "plugin host started again (pid \(host.pid))")
        case .failure(let error):
            if case .sandboxViolation(_, let call) = error {
                crashed(because: "\(error)", violation: call)
            } else {
                crashed(because: "\(error)")
            }
        }
    }

    /// Samples the live host's CPU clock against its calls' time; a host whose plugin burns CPU
    /// between calls is stopped, and its death counted as a crash.
    private func watchCPU() {
        let sample: (HostProcess, UInt64, UInt64)? = state.withLock { state in
            // Under the lock: the deciding thread holds it through every call, so no call is
            // half counted.
            guard let host = state.live, let cpu = host.cpuNanoseconds else { return nil }
            return (host, cpu, state.callNanoseconds)
        }
        guard let (host, cpu, calls) = sample,
              let overuse = cpuWatch.sample(pid: host.pid, cpu: cpu, calls: calls, at: Instant.now.nanoseconds) else { return }
        state.withLock { state in
            guard state.live === host else { return }
            host.kill()
            state.live = nil
            state.dying.append(host)
            state.failure = "its plugin burns CPU between calls (it \(overuse.description)): its plugin host was stopped"
            state.downReason = "its plugin host is being started again"
        }
    }

    // MARK: Deaths

    /// Reaps every host that exited; a live host that died on its own is a crash, and so is a
    /// host the deciding thread gave up on.
    private func reapExited() {
        let candidates = state.withLock { state in ([state.live].compactMap { $0 } + state.dying) }
        for host in candidates {
            guard let exit = host.reap(blocking: false) else { continue }
            forward(host.drainOutput())
            let (failure, violation): (String?, String?) = state.withLock { state in
                state.dying.removeAll { $0 === host }
                if state.live === host {
                    // Between calls (a thread of the plugin's): its report, if any, is still on
                    // the channel, which the deciding thread no longer reads.
                    state.live = nil
                    state.downReason = "its plugin host died (\(exit)) and is being started again"
                    let violation = host.pendingViolation() ?? host.unreportedViolation
                    return ("its plugin host \(exit) between calls", violation)
                }
                defer {
                    state.failure = nil
                    state.violation = nil
                }
                return (state.failure.map { "\($0) (\(exit))" }, state.violation ?? host.unreportedViolation)
            }
            if let failure { crashed(because: failure, violation: violation) }
        }
    }

    /// Counts a crash; starts the host again after a back-off, or quarantines the link. A
    /// forbidden system call (`violation`) quarantines it at once: a plugin that tries to escape
    /// its sandbox is not given another go.
    private func crashed(because cause: String, violation: String? = nil) {
        guard !state.withLock({ $0.stopping }) else { return }
        if let violation {
            return takeOutOfService(LinkHealth.Problem(
                state: .quarantined, cause: "sandbox_violation",
                reason: "its plugin made a system call its sandbox forbids (\(violation)): quarantined at once; the mech stays inhibited until a reload with another plugin file or configuration for this link"))
        }
        let now = Double(Instant.now.nanoseconds) / 1e9
        switch history.record(at: now) {
        case .restart(let after):
            nextStart = Instant.now.nanoseconds + UInt64(after * 1e9)
            state.withLock { $0.downReason = "its plugin host is being started again after a crash" }
            health.mark(LinkHealth.Problem(state: .restarting, cause: "crashed", reason: "\(cause); starting it again in \(Int(after * 1000)) ms"))
            report(link, .warning, "\(cause); starting it again in \(Int(after * 1000)) ms (\(history.recent(at: now)) of \(settings.maxCrashes) crashes within \(Int(settings.crashWindowSeconds)) s quarantine it)")
        case .quarantine(let crashes):
            takeOutOfService(LinkHealth.Problem(
                state: .quarantined, cause: "crashes",
                reason: "crashed \(crashes) times within \(Int(settings.crashWindowSeconds)) s (last: \(cause)); the mech stays inhibited until a reload with another plugin file or configuration for this link"))
        }
    }

    /// Takes the link out of service for good (until a reload changes it), on record.
    private func takeOutOfService(_ problem: LinkHealth.Problem) {
        state.withLock { $0.downReason = "it is quarantined" }
        if let problemWriting = quarantine?.add(QuarantineRecord(link: identity, problem: problem)) {
            report(link, .error, "cannot record the quarantine: \(problemWriting)")
        }
        health.mark(problem)
        report(link, .error, "quarantined: \(problem.reason)")
    }

    private func shutDown() {
        let hosts = state.withLock { state -> [HostProcess] in
            let all = [state.live].compactMap { $0 } + state.dying
            state.live = nil
            state.dying = []
            return all
        }
        for host in hosts {
            // End of the channel: the host destroys the instance and exits.
            shutdown(host.channel, Int32(SHUT_RDWR))
            var descriptor = pollfd(fd: host.pidfd, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 2000) <= 0 {
                report(link, .warning, "plugin host (pid \(host.pid)) did not exit within 2 s of its last call: killed")
                host.kill()
            }
            _ = host.reap(blocking: true)
            forward(host.drainOutput())
        }
    }

    private func forwardOutput() {
        for host in state.withLock({ state in [state.live].compactMap { $0 } + state.dying }) { forward(host.drainOutput()) }
    }

    /// The host's own output (a crash message of the Swift runtime, a plugin's printf) in the log.
    private func forward(_ output: String) {
        for line in output.split(separator: "\n") where !line.isEmpty { report(link, .warning, "plugin host: \(line)") }
    }

    private static func lastLine(_ output: String) -> String {
        output.split(separator: "\n").last.map { ": \($0)" } ?? ""
    }

    // MARK: Calls (the deciding thread)

    /// Decides one reading through the live host within the link's budget; a host that dies,
    /// breaks the protocol or overruns is given up (killed) and the reading rejected.
    func validate(_ reading: UnsafePointer<coinmech_reading>, _ decision: UnsafeMutablePointer<coinmech_decision>) {
        let refusal: (reason: StaticString, message: String)? = state.withLock { state in
            guard let host = state.live else { return ("plugin_unavailable", "link '\(link)': \(state.downReason); coin returned") }
            let started = Instant.now.nanoseconds
            defer { state.callNanoseconds &+= Instant.now.nanoseconds &- started }
            state.nextID &+= 1
            let id = state.nextID
            var request = HostWire.Validate(id: id, reading: reading.pointee, source: SourceName(cString: reading.pointee.source))
            let sent = withUnsafeBytes(of: &request) { cm_send_message(host.channel, $0.baseAddress, $0.count, -1, 1) }
            guard sent == MemoryLayout<HostWire.Validate>.size else {
                return giveUp(&state, host, why: "the reading could not be sent to its plugin host (\(String(cString: strerror(errno))))", reason: "plugin_crashed")
            }
            let deadline = Instant.now.nanoseconds &+ policy.budgetNanoseconds
            while true {
                let now = Instant.now.nanoseconds
                guard now < deadline else {
                    return giveUp(&state, host, why: "took longer than its \(Self.milliseconds(policy.budgetNanoseconds)) ms budget: its plugin host was stopped",
                                  reason: "plugin_hung")
                }
                var descriptor = pollfd(fd: host.channel, events: Int16(POLLIN), revents: 0)
                var wait = timespec(tv_sec: Int((deadline - now) / 1_000_000_000), tv_nsec: Int((deadline - now) % 1_000_000_000))
                guard cm_ppoll(&descriptor, 1, &wait) > 0 else { continue }
                var fd: Int32 = -1
                let count = cm_recv_message(host.channel, buffer.baseAddress, buffer.count, &fd, 1)
                if fd >= 0 { close(fd) }
                if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                guard count > 0 else {
                    return giveUp(&state, host, why: "its plugin host died during the call", reason: "plugin_crashed")
                }
                let received = UnsafeRawBufferPointer(rebasing: buffer[..<count])
                switch HostWire.header(of: received) {
                case (.decision, id)? where count == MemoryLayout<HostWire.Decided>.size:
                    // The host's decision, as much as this host's struct holds; checked like any
                    // plugin's by the chain.
                    let answered = received.loadUnaligned(as: HostWire.Decided.self).decision
                    let size = decision.pointee.size
                    withUnsafeBytes(of: answered) { bytes in
                        UnsafeMutableRawPointer(decision).copyMemory(from: bytes.baseAddress!, byteCount: min(bytes.count, Int(size)))
                    }
                    decision.pointee.size = size
                    return nil
                case (.log, _)?:
                    if let (level, text) = HostWire.logLine(of: received) { pluginLog(link, level, text) }
                case (.violation, _)?:
                    let call = HostProcess.forbiddenCall(in: received) ?? "an unknown call"
                    state.violation = call
                    return giveUp(&state, host, why: "was stopped: its plugin made a system call its sandbox forbids (\(call))",
                                  reason: "sandbox_violation")
                default:
                    return giveUp(&state, host, why: "its plugin host broke the protocol (an unexpected message of \(count) bytes)", reason: "plugin_crashed")
                }
            }
        }
        if let refusal {
            decision.pointee = coinmech_decision()
            decision.pointee.size = UInt32(MemoryLayout<coinmech_decision>.size)
            refusal.reason.withUTF8Buffer { reason in
                reason.withMemoryRebound(to: CChar.self) { reason in
                    refusal.message.withCString { coinmech_decision_reject(decision, reason.baseAddress, $0) }
                }
            }
        }
    }

    /// Kills `host`, hands it to the supervisor to reap and count, and says why the reading is
    /// returned ("link 'x' crashed: its plugin host died during the call; coin returned").
    private func giveUp(_ state: inout State, _ host: HostProcess, why: String, reason: StaticString) -> (reason: StaticString, message: String) {
        host.kill()
        state.live = nil
        state.dying.append(host)
        state.failure = why
        state.downReason = "its plugin host is being started again"
        wakeup.wake()
        let verb = reason.description == "plugin_crashed" ? "crashed: " : ""
        return (reason, "link '\(link)' \(verb)\(why); coin returned")
    }

    static func milliseconds(_ nanoseconds: UInt64) -> String { String(format: "%g", Double(nanoseconds) / 1e6) }

}
