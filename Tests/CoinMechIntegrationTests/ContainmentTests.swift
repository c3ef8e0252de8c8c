import CLinux
import CoinMechChain
import CoinMechConfiguration
import CoinMechDaemon
import CoinMechPluginABI
import CoinMechPlugins
@testable import CoinMechTestSupport
import Foundation
import Synchronization
import Testing

/// What the host promises plugins and what it does with a link it cannot trust: the threading
/// contract, reading kinds, quarantine by identity, the breadcrumb.
@Suite("Containment: the threading contract, reading kinds, quarantine, the breadcrumb", .serialized)
struct ContainmentTests {
    @Test("threading contract: the next generation is created while the current one validates; destroy never runs on the deciding thread")
    func threadingContract() throws {
        let dir = TestSupport.temporaryDirectory("threads")
        _ = try TestSupport.compileFixture("misbehaving", into: dir, as: "libthreads.so")
        let builder = ChainBuilder(loader: TestSupport.loader(directory: dir))
        let spec = LinkSpec(plugin: "threads", configJSON: #"{"mode":"threads","ms":2}"#)
        let holder = ChainHolder(try builder.build(generation: 1, links: [spec]), retirement: ChainRetirement())
        // The deciding thread decides on the current chain and, between readings, swaps in what a
        // reload built, as the deciding loop does: without the retirement thread, the replaced
        // chain's instances would be destroyed right here.
        let stop = Atomic<Bool>(false)
        let decided = Atomic<Int>(0)
        let built = Mutex<[Chain]>([])
        let decidingThread = Mutex<UInt?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            decidingThread.withLock { $0 = UInt(bitPattern: Int(bitPattern: pthread_self())) }
            var seq: UInt64 = 0
            while !stop.load(ordering: .relaxed) || !built.withLock({ $0.isEmpty }) {
                seq += 1
                _ = holder.current.decide(.coin(24.26, 5.67, seq: seq))
                decided.add(1, ordering: .relaxed)
                for chain in built.withLock({ pending in defer { pending.removeAll() }; return pending }) { holder.swap(chain) }
            }
            done.signal()
        }
        thread.start()
        // The reloads: each creates its instance while the deciding thread is inside validate
        // (where it spends nearly all its time once it runs).
        try TestSupport.waitUntil("the deciding thread to run") { decided.load(ordering: .relaxed) > 0 }
        for generation in 2...11 {
            let chain = try builder.build(generation: UInt64(generation), links: [spec])
            built.withLock { $0.append(chain) }
        }
        stop.store(true, ordering: .relaxed)
        #expect(done.wait(timeout: .now() + 10) == .success)

        // The copy the loader mapped (the current chain keeps it loaded).
        let handle = try #require(dlopen(try builder.loader.prepare(plugin: "threads").copyPath, RTLD_NOW | RTLD_NOLOAD))
        let createdWhileValidating = unsafeBitCast(try #require(dlsym(handle, "fixture_created_while_validating")), to: (@convention(c) () -> Int32).self)
        let destroyThreads = unsafeBitCast(try #require(dlsym(handle, "fixture_destroy_threads")),
                                           to: (@convention(c) (UnsafeMutablePointer<UInt>, Int32) -> Int32).self)
        // Ten generations were replaced: ten destroys, on the retirement thread, none on the deciding one.
        var threads = [UInt](repeating: 0, count: 64)
        try TestSupport.waitUntil("the ten replaced instances to be destroyed", timeout: 10) { destroyThreads(&threads, 64) >= 10 }
        let destroyedOn = threads.prefix(Int(destroyThreads(&threads, 64)))
        let deciding = try #require(decidingThread.withLock { $0 })
        #expect(!destroyedOn.contains(deciding))
        #expect(createdWhileValidating() > 0, "no create overlapped a validate: the contract's case was not exercised")
    }

    @Test("a link is given only the reading kinds it declares; a coin id never reaches a measured-only link")
    func readingKinds() throws {
        let chain = try TestSupport.chain([LinkSpec(plugin: "sanity"), LinkSpec(plugin: "weight-floor", configJSON: #"{"min_weight_g": 1.5}"#)])
        let coinID = Reading(deviceSeq: 1, coinPosition: 3, coinID: "EU200A", sorterPath: 1)
        #expect(coinID.kind == COINMECH_READING_COIN_ID)
        #expect(coinID.coinID == "EU200A")
        let decision = chain.decide(coinID)
        #expect(decision.linkName == Chain.terminalLinkName)
        // Sanity would have rejected a reading without measurements as empty: it was not asked.
        #expect(chain.links.allSatisfy { $0.statistics.snapshot.calls == 0 })
        #expect(chain.decide(Reading(deviceSeq: 2)).rejection?.reason == "empty_reading")
        #expect(chain.links[0].origin.readingKindNames == ["measured"])
    }

    @Test("a quarantined link stays out while its plugin file and configuration stay the same; a change lifts it")
    func quarantineByIdentity() throws {
        let state = TestSupport.temporaryDirectory("quarantine")
        let store = QuarantineStore(stateDirectory: state)
        let spec = LinkSpec(name: "floor", plugin: "weight-floor", configJSON: #"{"min_weight_g": 1.5}"#)
        let file = try TestSupport.loader().prepare(plugin: "weight-floor")
        let identity = LinkIdentity(name: "floor", plugin: "weight-floor", sha256: file.sha256, configSHA256: spec.configSHA256,
                                    budgetNanoseconds: spec.policy.budgetNanoseconds)
        store.add(QuarantineRecord(link: identity, problem: LinkHealth.Problem(state: .quarantined, cause: "crashed_daemon", reason: "it crashed")))
        let builder = ChainBuilder(loader: TestSupport.loader(), environment: ChainEnvironment(quarantine: store))

        let held = try builder.build(generation: 1, links: [LinkSpec(plugin: "sanity"), spec])
        #expect(held.links[1].health.current == .quarantined)
        #expect(held.links[1].origin.version == "(not loaded)")
        // Fail closed: every kind of reading is refused at the link, named.
        for reading in [Reading.coin(24.26, 5.67), Reading(deviceSeq: 2, coinPosition: 1, coinID: "EU200A")] {
            let decision = held.decide(reading)
            #expect(decision.linkName == "floor")
            #expect(decision.rejection == Rejection(reason: "quarantined", message: "link 'floor' is quarantined: it crashed"))
        }
        #expect(QuarantineStore(stateDirectory: state).record(for: "floor") != nil, "it is on disk for the next start")

        var warnings: [String] = []
        var changed = spec
        changed.configJSON = #"{"min_weight_g": 1.6}"#
        let lifted = try builder.build(generation: 2, links: [changed]) { warnings.append($0) }
        #expect(lifted.links[0].health.current == .ok)
        #expect(lifted.decide(.coin(24, 1.55)).rejection?.reason == "too_light")
        #expect(warnings.contains { $0.hasPrefix("chain link 1 'floor': quarantine lifted: the link's plugin file or configuration changed") })
        #expect(QuarantineStore(stateDirectory: state).record(for: "floor") == nil)
        // Another isolation is another configuration too (a hung link in process is lifted by isolating it).
        #expect(LinkSpec(plugin: "x", policy: LinkPolicy(isolation: .process)).configSHA256 != LinkSpec(plugin: "x").configSHA256)
    }

    @Test("the breadcrumb names each link of a generation, and its words say generation, link and phase")
    func breadcrumb() throws {
        let state = TestSupport.temporaryDirectory("crumb")
        let crumb = try PluginBreadcrumb(stateDirectory: state)
        #expect(crumb.lastRun == nil)
        let link = LinkIdentity(name: "usd", plugin: "coin-table", sha256: String(repeating: "a", count: 64),
                                configSHA256: String(repeating: "b", count: 64), budgetNanoseconds: 10_000_000)
        crumb.record(generation: 7, index: 2, link: link)
        #expect(crumb.link(generation: 7, index: 2) == link)
        #expect(crumb.link(generation: 8, index: 2) == nil)
        let word = PluginBreadcrumb.word(generation: 7, index: 2, phase: .create)
        #expect(PluginBreadcrumb.decode(word)?.generation == 7 && PluginBreadcrumb.decode(word)?.index == 2
            && PluginBreadcrumb.decode(word)?.phase == .create)
        #expect(PluginBreadcrumb.decode(0) == nil)
        // A chain built into it announces each call in the deciding slot, and leaves it empty after.
        let chain = try ChainBuilder(loader: TestSupport.loader(), environment: ChainEnvironment(breadcrumb: crumb))
            .build(generation: 9, links: [LinkSpec(plugin: "sanity")])
        _ = chain.decide(.coin(24, 5))
        #expect(cm_crumb_load(crumb.decidingSlot) == 0)
        #expect(crumb.link(generation: 9, index: 0)?.name == "sanity")
        // A run that ended without a crash leaves nothing to quarantine.
        #expect(try PluginBreadcrumb(stateDirectory: state).lastRun == nil)
    }

    @Test("an in-process call past its budget expires the hang timer while its word is in the slot; calls within it leave the timer silent")
    func hangTimer() throws {
        let state = TestSupport.temporaryDirectory("hang-timer")
        let crumb = try PluginBreadcrumb(stateDirectory: state)
        let dir = TestSupport.temporaryDirectory("hang-timer-plugins")
        _ = try TestSupport.compileFixture("misbehaving", into: dir, as: "libmisbehaving.so")
        let builder = ChainBuilder(loader: TestSupport.loader(directory: dir), environment: ChainEnvironment(breadcrumb: crumb))
        let budget = LinkPolicy(isolation: .inProcess, budgetNanoseconds: 10_000_000)

        // Within the budget, many times over: the timer never expires, so nothing would wake.
        let fast = try builder.build(generation: 1, links: [LinkSpec(plugin: "misbehaving", configJSON: #"{"mode":"pass"}"#, policy: budget)])
        for seq in 1...200 { _ = fast.decide(.coin(24.26, 5.67, seq: UInt64(seq))) }
        var quiet = [pollfd(fd: crumb.hangTimer, events: Int16(POLLIN), revents: 0)]
        #expect(poll(&quiet, 1, 50) == 0, "the hang timer expired although every call kept within its budget")

        // Past it: 200 ms asleep in a 10 ms budget. The timer expires during the call, with the
        // call's word in the slot before and after the expiration is read.
        let slow = try builder.build(generation: 2, links: [LinkSpec(plugin: "misbehaving", configJSON: #"{"mode":"sleep","ms":200}"#, policy: budget)])
        let done = DispatchSemaphore(value: 0)
        Thread {
            _ = slow.decide(.coin(24.26, 5.67, seq: 1))
            done.signal()
        }.start()
        var expiry = [pollfd(fd: crumb.hangTimer, events: Int16(POLLIN), revents: 0)]
        #expect(poll(&expiry, 1, 5_000) == 1, "the hang timer did not expire during a call 20 times its budget")
        let before = cm_crumb_load(crumb.decidingSlot)
        let expirations = cm_hang_timer_expirations(crumb.hangTimer)
        let after = cm_crumb_load(crumb.decidingSlot)
        #expect(expirations == 1)
        #expect(before != 0 && before == after)
        #expect(PluginBreadcrumb.decode(before)?.generation == 2 && PluginBreadcrumb.decode(before)?.index == 0)
        #expect(done.wait(timeout: .now() + 10) == .success)
        // The walk's end disarmed it, and the slot is empty again.
        #expect(cm_hang_timer_expirations(crumb.hangTimer) == 0)
        #expect(cm_crumb_load(crumb.decidingSlot) == 0)
    }
}
