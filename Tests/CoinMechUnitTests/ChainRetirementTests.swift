import CoinMechChain
import CoinMechPlugins
@testable import CoinMechTestSupport
import Testing

/// The retirement thread: replaced chains are released off the caller's thread once nobody
/// holds them, and stopping it ends the thread without waiting for a chain someone still holds.
@Suite("Chain retirement: released when nobody holds them, and a stop that ends the thread")
struct ChainRetirementTests {
    @Test("a chain nobody holds is released by the time stop returns")
    func releasedBeforeStop() throws {
        let retirement = ChainRetirement()
        weak var released: Chain?
        do {
            let chain = try TestSupport.chain([LinkSpec(name: "sanity", plugin: "sanity", configJSON: "{}")])
            released = chain
            retirement.retire(chain)
        }
        retirement.stop()
        #expect(released == nil)
    }

    @Test("a chain someone still holds does not hold up the stop; its holder releases it")
    func heldChainDoesNotBlock() throws {
        let retirement = ChainRetirement()
        let chain = try TestSupport.chain([LinkSpec(name: "sanity", plugin: "sanity", configJSON: "{}")])
        retirement.retire(chain)
        retirement.stop()
        retirement.stop()  // a second stop returns at once
        #expect(chain.links.count == 1)
    }

    @Test("a holder's swap hands the replaced chain to retirement; stopRetiring ends the thread")
    func holderSwap() throws {
        let holder = ChainHolder(try TestSupport.chain([LinkSpec(name: "sanity", plugin: "sanity", configJSON: "{}")]), retirement: ChainRetirement())
        weak let first: Chain? = holder.current
        holder.swap(try TestSupport.chain([LinkSpec(name: "sanity", plugin: "sanity", configJSON: "{}")], generation: 2))
        holder.stopRetiring()
        #expect(first == nil)
        #expect(holder.current.generation == 2)
    }

    @Test("a plugin whose destroy never returns does not hold up the stop: it gives up after its time")
    func hungDestroy() throws {
        let dir = TestSupport.temporaryDirectory("hang-destroy")
        _ = try TestSupport.compileFixture("misbehaving", into: dir)
        let retirement = ChainRetirement()
        do {
            let chain = try ChainBuilder(loader: TestSupport.loader(directory: dir))
                .build(generation: 1, links: [LinkSpec(name: "stuck", plugin: "misbehaving", configJSON: #"{"mode":"hang_destroy"}"#)])
            retirement.retire(chain)
        }
        // The retirement thread is now inside destroy for good (it stays there until the process ends).
        #expect(retirement.stop(timeout: 0.5) == false)
    }
}
