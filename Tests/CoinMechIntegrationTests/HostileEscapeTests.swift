import CoinMechChain
import CoinMechPlugins
@testable import CoinMechTestSupport
import Foundation
import Testing

/// A hostile plugin trying every escape from the first code of it that runs: its constructor
/// (inside `dlopen`), its entry point and `create`, then its threads between readings, in real
/// `coinmech-plugin-host` processes of the build. Before the sandbox went in ahead of `dlopen`,
/// a plugin that forked in `create` had a child without the filter, and that child opened a TCP
/// socket. Every escape is now refused or fatal to its host alone, and on record.
@Suite("A hostile plugin's escapes from its constructor, its entry and create: refused, or fatal to its host alone", .serialized)
struct HostileEscapeTests {
    /// Each escape that ends its host, and the system call the sandbox names for it.
    static let fatal: [String: String] = [
        "fork": "clone", "vfork": "vfork", "clone": "clone", "exec": "execve",
        "tcp": "socket", "tcp6": "socket", "udp": "socket", "netlink": "socket", "packet": "socket", "socketpair": "socketpair",
        "kill": "kill", "tgkill": "tgkill", "sigqueue": "rt_sigqueueinfo", "pidfd_signal": "pidfd_open", "ptrace": "ptrace",
        "setown": "fcntl", "async": "fcntl", "setsig": "fcntl", "fioasync": "ioctl",
    ]
    /// The constructor and the entry (tries compiled in) share them out; create tries them all.
    static let constructorTries = ["fork", "exec", "tcp", "packet", "kill", "sigqueue", "setown", "fioasync", "ptrace"]
    static let entryTries = ["clone", "vfork", "tcp6", "udp", "netlink", "socketpair", "tgkill", "pidfd_signal", "async", "setsig"]

    /// The hostile fixture in a directory of its own, with `early` ("phase:try,…") compiled in.
    static func plugin(early: String = "") throws -> String {
        let dir = TestSupport.temporaryDirectory("hostile-escape")
        _ = try TestSupport.compileFixture("hostile", into: dir, as: "libhostile.so", defines: early.isEmpty ? [] : ["HOSTILE_EARLY=\"\(early)\""])
        return dir
    }

    static func link(_ config: String = "{}") -> LinkSpec {
        LinkSpec(name: "third-party", plugin: "hostile", configJSON: config,
                 policy: LinkPolicy(isolation: .process, budgetNanoseconds: 1_000_000_000, sandbox: SandboxPolicy(missing: .required)))
    }

    /// Builds the one-link chain as the daemon does at start; returns the link and what was logged.
    static func start(_ dir: String, _ config: String = "{}", crashes: Int = 3) throws -> (ChainLink, LogLines, Chain) {
        let lines = LogLines()
        let chain = try IsolationTests.builder(dir, crashes: crashes, quarantine: QuarantineStore(stateDirectory: dir), lines: lines)
            .build(generation: 1, links: [Self.link(config)], quarantiningCreateCrashes: true)
        return (chain.links[0], lines, chain)
    }

    /// The link was quarantined at start for the call, the try was made, and nothing of it came back.
    static func expectStopped(_ attempt: String, in phase: String, _ link: ChainLink, _ lines: LogLines) {
        let call = fatal[attempt]!
        #expect(link.health.current == .quarantined, "\(phase) \(attempt): \(lines.all)")
        #expect(link.health.problem?.cause == "sandbox_violation", "\(phase) \(attempt): \(String(describing: link.health.problem))")
        #expect(link.health.problem?.reason.hasPrefix("its plugin made a system call its sandbox forbids (\(call)) while loading") == true,
                "\(phase) \(attempt): \(String(describing: link.health.problem))")
        #expect(lines.all.contains { $0.contains("hostile: trying \(attempt)") }, "\(phase) \(attempt) never ran: \(lines.all)")
        #expect(!lines.all.contains { $0.contains("hostile: \(attempt) ") }, "\(phase) \(attempt) came back: \(lines.all)")
    }

    @Test("from its constructor, inside dlopen: every escape ends the host, naming the call; the link is quarantined at start", arguments: Self.constructorTries)
    func constructor(attempt: String) throws {
        let (link, lines, chain) = try Self.start(try Self.plugin(early: "constructor:\(attempt)"))
        Self.expectStopped(attempt, in: "constructor", link, lines)
        #expect(chain.decide(.coin(24.26, 5.67)).rejection?.reason == "quarantined")
    }

    @Test("from its entry point, before the handshake is checked: every escape ends the host, naming the call", arguments: Self.entryTries)
    func entry(attempt: String) throws {
        let (link, lines, _) = try Self.start(try Self.plugin(early: "entry:\(attempt)"))
        Self.expectStopped(attempt, in: "entry", link, lines)
    }

    @Test("from create: every escape ends the host, naming the call (a child forked there once outlived its host and reached the network)")
    func create() throws {
        let dir = try Self.plugin()
        for attempt in Self.fatal.keys.sorted() {
            let (link, lines, _) = try Self.start(dir, #"{"create_tries":"\#(attempt)"}"#)
            Self.expectStopped(attempt, in: "create", link, lines)
            _ = QuarantineStore(stateDirectory: dir).lift("third-party")
        }
    }

    @Test("at a reload, an escape while loading fails the build, naming the call: the running chain stays")
    func reloadRefused() throws {
        let dir = try Self.plugin(early: "constructor:fork")
        do throws(ChainBuildError) {
            _ = try IsolationTests.builder(dir).build(generation: 2, links: [Self.link()])
            Issue.record("a plugin that forks in its constructor must fail a reload")
        } catch {
            guard case .plugin(.sandboxViolation(_, let call)) = error.cause else {
                Issue.record("not a sandbox violation: \(error)")
                return
            }
            #expect(call == "clone")
        }
    }

    @Test("files and memory from its constructor and create: refused with an error, as they are later", arguments: ["constructor", "create"])
    func refused(phase: String) throws {
        let tries = "tmp,memory"
        let dir = try Self.plugin(early: phase == "constructor" ? tries.split(separator: ",").map { "constructor:\($0)" }.joined(separator: ",") : "")
        let (link, lines, _) = try Self.start(dir, phase == "create" ? #"{"create_tries":"\#(tries)"}"# : "{}")
        #expect(link.health.current == .ok, "\(lines.all)")
        #expect(lines.all.contains { $0.contains("hostile: tmp refused: Permission denied") }, "\(lines.all)")
        #expect(lines.all.contains { $0.contains("hostile: memory refused: Cannot allocate memory") }, "\(lines.all)")
        #expect(!lines.all.contains { $0.contains("SUCCEEDED") }, "\(lines.all)")
    }

    @Test("threads it starts that spin between readings (from its constructor, create or a reading) get its host stopped by the CPU watch, and the link quarantined at the crash limit",
          arguments: ["constructor", "create", "validate"])
    func spinning(phase: String) throws {
        let dir = try Self.plugin(early: phase == "constructor" ? "constructor:spin" : "")
        let config = switch phase {
        case "create": #"{"create_tries":"spin"}"#
        case "validate": #"{"tries":"spin"}"#
        default: "{}"
        }
        let (link, lines, chain) = try Self.start(dir, config, crashes: 2)
        #expect(link.health.current == .ok, "it loads: its threads spin only afterwards")
        let pid = try #require((link.validator as? IsolatedValidator)?.hostPID)
        if phase == "validate" { _ = chain.decide(.coin(24.26, 5.67)) }
        try TestSupport.waitUntil("the CPU watch to stop the first host", timeout: 10) { IsolationTests.gone(pid) }
        // Started again, spinning again (a reading starts them again), stopped again: quarantined.
        if phase == "validate" {
            // A new host, not the stopped one before its death is noticed (health still ok then:
            // a reading sent to it is lost, and no host spins again).
            try TestSupport.waitUntil("the host to be started again", timeout: 10) {
                link.health.current == .ok && (link.validator as? IsolatedValidator)?.hostPID.map { $0 != pid } == true
            }
            _ = chain.decide(.coin(24.26, 5.67, seq: 2))
        }
        try TestSupport.waitUntil("the link to be quarantined", timeout: 20) { link.health.current == .quarantined }
        let problem = try #require(link.health.problem)
        #expect(problem.cause == "crashes")
        #expect(problem.reason.contains("its plugin burns CPU between calls"), "\(problem.reason)")
        #expect(lines.all.contains { $0.contains("hostile: spin SUCCEEDED") }, "\(lines.all)")
    }
}
