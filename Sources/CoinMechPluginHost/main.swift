// coinmech-plugin-host: runs one isolated link's plugin for coinmechd. Started by the daemon with
// its channel on descriptor 3 (and nothing else: no other descriptor, no new privileges, maybe
// another user); loads the plugin from the descriptor the first message carries, creates the
// instance, answers every reading, and exits when the daemon closes the channel. A crash here
// costs the daemon one reading. Around the plugin it puts the sandbox the load message asks for
// (HostSandbox), before the plugin's file is mapped: a forbidden system call, from its first
// constructor on, ends it, and the daemon is told which. Not meant to be started by hand.
import CLinux
import CSandbox
import CoinMechChain
import CoinMechPluginABI
import CoinMechPlugins

#if canImport(Glibc)
import Glibc
#endif

let channel = HostWire.channelDescriptor
signal(SIGPIPE, SIG_IGN)
// A plugin's crash ends this process by its signal, which the daemon reports: no crash handler
// of the runtime's, which would try to start a backtracer the sandbox forbids and turn every
// crash into a violation.
for fatal in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT] { signal(fatal, SIG_DFL) }

/// Sends a message; a closed channel means the daemon is gone: nothing left to do.
func send(_ bytes: [UInt8], dontWait: Bool = false) {
    let sent = bytes.withUnsafeBytes { cm_send_message(channel, $0.baseAddress, $0.count, -1, dontWait ? 1 : 0) }
    if sent < 0 && errno != EAGAIN { exit(0) }
}

func fail(_ error: PluginLoadError) -> Never {
    send(HostWire.encode(.failed, error))
    exit(1)
}

var message = [UInt8](repeating: 0, count: HostWire.maximumMessage)
var pluginDescriptor: Int32 = -1
let count = message.withUnsafeMutableBytes { cm_recv_message(channel, $0.baseAddress, $0.count, &pluginDescriptor, 0) }
guard count > 0 else {
    let line = "coinmech-plugin-host: no load message on descriptor 3 (started by hand? coinmechd starts it)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(2)
}
let load: HostWire.Load? = message.withUnsafeBytes { raw in
    let received = UnsafeRawBufferPointer(rebasing: raw[..<count])
    guard HostWire.header(of: received)?.kind == .load else { return nil }
    return HostWire.body(HostWire.Load.self, of: received)
}
guard let load, load.protocolVersion == HostWire.protocolVersion, pluginDescriptor >= 0 else {
    fail(.hostFailed(path: load?.sourcePath ?? "?", message: "coinmech-plugin-host speaks host protocol \(HostWire.protocolVersion), and the daemon another (or sent no plugin): install both from one build"))
}

/// Loads the plugin inside the sandbox, then answers readings until the daemon closes the
/// channel; the instance is destroyed when this returns.
func serve(_ load: HostWire.Load, pluginDescriptor: Int32) {
    // First, while this process has one thread: a network namespace of its own, where allowed.
    let namespaceError = load.sandbox.missing == .off ? 0 : cm_sandbox_network_namespace()
    var sandbox = HostSandbox(policy: load.sandbox, namespaceError: namespaceError)
    // Every layer before the plugin's first instruction: its constructors run inside dlopen.
    sandbox.enter(channel: channel)
    // A link that requires the sandbox is refused before its plugin runs a line outside it.
    if load.sandbox.missing == .required, sandbox.report.lacksRequired {
        fail(.sandboxUnavailable(path: load.sourcePath, missing: sandbox.report.missing))
    }
    // The plugin's own log lines travel to the daemon; never block the plugin on a full channel.
    let log: PluginLogSink = { _, level, text in send(HostWire.log(level: level, text), dontWait: true) }
    // The descriptor stays open: the loaded image's path names it.
    let file = PluginFile(sourcePath: load.sourcePath, copyPath: "/proc/self/fd/\(pluginDescriptor)", sha256: load.sha256, usesSwift: load.usesSwift)
    let instance: PluginInstance
    do throws(PluginLoadError) {
        instance = try PluginLoader.image(of: file).instantiate(configJSON: load.configJSON, instanceName: load.link, log: log)
    } catch {
        fail(error)
    }
    send(HostWire.encode(.ready, HostWire.Ready(metadata: instance.image.metadata, description: instance.describe, sandbox: sandbox.report)))

    // Readings until the daemon closes the channel.
    let request = UnsafeMutableRawBufferPointer.allocate(byteCount: MemoryLayout<HostWire.Validate>.size + 64, alignment: 16)
    var unexpected: Int32 = -1
    while true {
        let got = cm_recv_message(channel, request.baseAddress, request.count, &unexpected, 0)
        if unexpected >= 0 { close(unexpected) }
        if got < 0 && errno == EINTR { continue }
        guard got > 0 else { return }
        guard got == MemoryLayout<HostWire.Validate>.size, let header = HostWire.header(of: UnsafeRawBufferPointer(rebasing: request[..<got])),
              header.kind == .validate else { exit(3) }
        var validate = request.loadUnaligned(as: HostWire.Validate.self)
        var answer = HostWire.Decided(id: header.id, decision: coinmech_decision())
        answer.decision.size = UInt32(MemoryLayout<coinmech_decision>.size)
        validate.source.withCString { source in
            validate.reading.source = source
            validate.reading.size = UInt32(MemoryLayout<coinmech_reading>.size)
            instance.call.function(instance.call.context, &validate.reading, &answer.decision)
        }
        let sent = withUnsafeBytes(of: &answer) { cm_send_message(channel, $0.baseAddress, $0.count, -1, 0) }
        guard sent > 0 else { return }
    }
}

serve(load, pluginDescriptor: pluginDescriptor)
exit(0)
