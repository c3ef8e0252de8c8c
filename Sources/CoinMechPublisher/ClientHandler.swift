import CoinMechLedger
import CoinMechModel
import CoinMechProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix

/// What every client connection shares.
public struct PublisherContext: Sendable {
    public let ledger: Ledger
    public let control: any ControlPlane
    public let hub: EventHub
    public let policy: AccessPolicy
    public let daemonVersion: String
    /// Events a subscriber may have waiting before it is cut off with `overflow`.
    public let maximumQueuedEvents: Int
    public let logger: Logger
    /// Where blocking work runs (ledger reads, user and group lookups): never on an event loop.
    public let blocking: NIOThreadPool
    /// What one client may cost the daemon, and the connections open now.
    public let limits: ClientLimits
    let clients = ClientCount()
    /// Admits the commands that cost the deciding thread, for every client together.
    let deciderCommands: CommandGate

    public init(
        ledger: Ledger, control: any ControlPlane, hub: EventHub, policy: AccessPolicy, daemonVersion: String,
        maximumQueuedEvents: Int = ClientProtocol.maximumQueuedEvents, limits: ClientLimits = ClientLimits(), logger: Logger,
        blocking: NIOThreadPool
    ) {
        self.blocking = blocking
        self.limits = limits
        deciderCommands = CommandGate(burst: limits.deciderCommandBurst, perSecond: limits.deciderCommandsPerSecond)
        self.maximumQueuedEvents = maximumQueuedEvents
        self.ledger = ledger
        self.control = control
        self.hub = hub
        self.policy = policy
        self.daemonVersion = daemonVersion
        self.logger = logger
    }
}

/// One client connection: answers requests, and streams events to a subscriber through a
/// bounded queue that is written only while the socket can take it.
///
/// Back-pressure (docs/PROTOCOL.md, "Limits"): one request is answered at a time, and the next
/// is taken only once the socket can take more replies; bytes read ahead of it are bounded,
/// past which the socket is not read, so a client that writes without reading fills its own
/// socket, not the daemon. A client that leaves its replies unread too long, or says nothing
/// too long after connecting, is told why and disconnected.
final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let shared: PublisherContext
    private var peer: PeerCredentials
    /// Whether the peer may use control commands (looked up once, off the event loop).
    private var mayControl = false
    private var context: ChannelHandlerContext?
    /// Request bytes in arrival order, taken a line at a time: one request is handled at a
    /// time, so replies keep their order while a request's blocking part runs in the thread pool.
    private var requests = RequestLines()
    private var handling = true  // until the hello is sent
    /// The socket is read (`autoRead`); off while `requests` holds `readAheadBytes`.
    private var reading = true
    /// Closes a connection that has sent no request yet; cut off a client whose replies wait.
    private var idleTimer: Scheduled<Void>?
    private var stallTimer: Scheduled<Void>?

    private enum Subscription {
        case none
        /// Reading history from the ledger; live events wait in `queue` too, deduplicated by seq.
        case replaying
        case live
    }
    private var subscription = Subscription.none
    /// Events waiting to be written, in seq order.
    private var queue: [LedgerEvent] = []
    /// Highest seq queued (replayed or live): nothing at or below it is queued again.
    private var queuedThrough: Int64 = 0
    /// Highest seq written to the socket.
    private var writtenThrough: Int64 = 0
    /// Live events that arrived while the history was being read.
    private var heldLive: [LedgerEvent] = []
    /// A page of history is being read in the thread pool.
    private var replayReading = false
    private var closing = false
    /// The subscriber asked for accepted decisions too (coins pending the mech's confirmation);
    /// otherwise money arrives as `coin` events only.
    private var includePending = false

    init(shared: PublisherContext, peer: PeerCredentials) {
        self.shared = shared
        self.peer = peer
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        shared.hub.unregister(ObjectIdentifier(self))
        cancelTimers()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        let limits = shared.limits
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(in: limits.idleTimeout) {
            bound.value.cutOff("no request within \(Self.seconds(limits.idleTimeout)) s of connecting: disconnected (send a request, e.g. {\"cmd\":\"subscribe\"}, after the hello)")
        }
        // The peer's name and rights (NSS lookups) and the last seq (a ledger read) are found in
        // the thread pool; requests that arrive meanwhile wait for the hello.
        let (ledger, policy, peer) = (shared.ledger, shared.policy, peer)
        offload({ () -> (Int64, PeerCredentials, Bool) in
            var named = peer
            named.resolveName()
            return ((try? ledger.lastSeq()) ?? 0, named, policy.allowsControl(named))
        }) { handler, result in
            guard case .success(let (seq, named, allowed)) = result else { return }
            handler.peer = named
            handler.mayControl = allowed
            handler.send(ClientProtocol.hello(version: handler.shared.daemonVersion, seq: seq))
            handler.next()
        }
        context.fireChannelActive()
    }

    /// Runs `work` in the thread pool, then `done` on this connection's event loop.
    private func offload<T: Sendable>(_ work: @escaping @Sendable () throws -> T, _ done: @escaping (ClientHandler, Result<T, any Error>) -> Void) {
        guard let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let then = NIOLoopBound(done, eventLoop: context.eventLoop)
        shared.blocking.runIfActive(eventLoop: context.eventLoop, work).whenComplete { result in
            then.value(bound.value, result)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        shared.hub.unregister(ObjectIdentifier(self))
        cancelTimers()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stallTimer?.cancel()
            stallTimer = nil
            drain()
            if !handling { next() }
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        shared.logger.debug("client connection error", metadata: ["peer": "\(peer)", "error": "\(error)"])
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        requests.append(&bytes)
        // Read ahead no further: the client's further writes wait in the kernel.
        if reading, requests.bufferedBytes >= shared.limits.readAheadBytes {
            reading = false
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
        }
        if !handling { next() }
    }

    /// Handles the next waiting request, if none is being handled and the socket can take its
    /// reply; reads on once what was read ahead is answered.
    private func next() {
        handling = false
        guard let context else { return }
        while !handling, !closing {
            guard context.channel.isWritable else {
                // Its replies wait unread: nothing more is taken, and a client that leaves them
                // there is cut off.
                if stallTimer == nil, requests.bufferedBytes > 0 {
                    let timeout = shared.limits.stallTimeout
                    let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
                    stallTimer = context.eventLoop.scheduleTask(in: timeout) {
                        bound.value.cutOff("replies left unread for \(Self.seconds(timeout)) s while requests wait: disconnected (read the replies to your requests)")
                    }
                }
                return
            }
            guard let line = requests.next() else { break }
            switch line {
            case .line(let text) where text.trimmingCharacters(in: .whitespaces).isEmpty:
                continue
            case .tooLong:
                firstRequest()
                send(ClientProtocol.error(id: nil, .lineTooLong, "request longer than \(ClientProtocol.maximumRequestLength) bytes; skipped"))
            case .line(let text):
                firstRequest()
                handle(text)
            }
        }
        if !reading, !closing, requests.bufferedBytes < shared.limits.readAheadBytes / 2 {
            reading = true
            context.channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
            context.read()
        }
    }

    /// The client has spoken: it is no longer idle.
    private func firstRequest() {
        idleTimer?.cancel()
        idleTimer = nil
    }

    private func cancelTimers() {
        idleTimer?.cancel()
        stallTimer?.cancel()
        idleTimer = nil
        stallTimer = nil
    }

    /// Tells the client why and closes the connection (a client that reads nothing never takes
    /// the line; it is written all the same, past the socket's high-water mark).
    private func cutOff(_ why: String) {
        guard let context, !closing else { return }
        shared.logger.notice("client disconnected", metadata: ["peer": "\(peer)", "why": "\(why)"])
        closing = true
        cancelTimers()
        shared.hub.unregister(ObjectIdentifier(self))
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(line(ClientProtocol.error(id: nil, .unavailable, why)))).whenComplete { _ in
            channel.close(promise: nil)
        }
        context.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }

    static func seconds(_ amount: TimeAmount) -> String {
        let value = Double(amount.nanoseconds) / 1e9
        return value == value.rounded() ? String(Int64(value)) : String(value)
    }

    /// A request whose answer needs blocking work: the reply comes from the thread pool, and
    /// the next request waits for it.
    private func reply<T: Sendable>(_ id: JSON?, _ work: @escaping @Sendable () throws(CommandError) -> T, _ answer: @escaping (ClientHandler, T) -> JSON?) {
        handling = true
        offload({ () throws -> T in try work() }) { handler, result in
            switch result {
            case .success(let value):
                if let reply = answer(handler, value) { handler.send(reply) }
            case .failure(let error as CommandError):
                handler.send(ClientProtocol.error(id: id, error.code, error.message))
            case .failure(let error):
                handler.send(ClientProtocol.error(id: id, .unavailable, "\(error)"))
            }
            handler.next()
        }
    }

    // MARK: Requests

    private func handle(_ text: String) {
        let request: ClientRequest
        switch ClientRequest.parse(text) {
        case .success(let parsed): request = parsed
        case .failure(let failure): return send(ClientProtocol.error(id: failure.id, failure.code, failure.message))
        }
        let id = request.id
        if OperatorCommand.Name(rawValue: request.name)?.isControl == true, !mayControl {
            shared.logger.notice("control command refused", metadata: ["peer": "\(peer)", "cmd": "\(request.name)"])
            return send(ClientProtocol.error(id: id, .forbidden, "\(peer.userName) may not use '\(request.name)'"))
        }
        do throws(CommandError) {
            let command: ClientRequest.Command
            switch request.command {
            case .success(let checked): command = checked
            case .failure(let failure): throw CommandError(failure.code, failure.message)
            }
            let (ledger, control) = (shared.ledger, shared.control)
            switch command {
            case .status:
                reply(id, { control.status() }) { _, status in ClientProtocol.reply(id: id, result: status) }
            case .chain:
                send(ClientProtocol.reply(id: id, result: control.chain()))
            case .totals:
                reply(id, { () throws(CommandError) in try Self.read { try ledger.totals() } }) { _, totals in ClientProtocol.reply(id: id, result: totals.json) }
            case .events(let since, let limit):
                reply(id, { () throws(CommandError) in
                    (try Self.read { try ledger.events(since: since, limit: Int(limit)) }, try Self.read { try ledger.lastSeq() })
                }) { _, found in
                    ClientProtocol.reply(id: id, result: EventsReply(events: found.0, lastSeq: found.1).json)
                }
            case .subscribe(let requested, let pending):
                guard case .none = subscription else { throw CommandError(.badRequest, "already subscribed on this connection") }
                reply(id, { () throws(CommandError) in try Self.read { try ledger.lastSeq() } }) { handler, last in
                    let since = requested ?? last
                    handler.includePending = pending
                    handler.send(ClientProtocol.reply(id: id, result: SubscribeReply(since: since, seq: last, pending: pending).json))
                    handler.subscribe(since: since)
                    return nil
                }
            case .inhibit, .collect, .reload, .teachStart, .teachCommit, .teachAbort, .payout, .refill, .float, .spend, .refund, .cancel:
                let peer = peer
                onDecidingThread(id) { completion in control.control(command, by: peer, completion: completion) }
            case .teachStatus:
                reply(id, { control.teachStatus() }) { _, status in ClientProtocol.reply(id: id, result: status) }
            case .explain(let diameter, let weight, let thickness):
                onDecidingThread(id) { completion in control.explain(diameter: diameter, weight: weight, thickness: thickness, completion: completion) }
            case .payoutPlan(let amount, let currency):
                reply(id, { () throws(CommandError) in try control.payoutPlan(amountMinor: amount, currency: currency) }) { _, plan in
                    ClientProtocol.reply(id: id, result: plan)
                }
            case .credit:
                reply(id, { () throws(CommandError) in try control.credit() }) { _, credit in ClientProtocol.reply(id: id, result: credit) }
            }
        } catch {
            send(ClientProtocol.error(id: id, error.code, error.message))
        }
    }

    /// A ledger read (in the thread pool); a failure becomes `unavailable`.
    private static func read<T>(_ body: () throws -> T) throws(CommandError) -> T {
        do {
            return try body()
        } catch {
            throw CommandError(.unavailable, "\(error)")
        }
    }

    /// A command the deciding thread (or the ledger's writer) carries out: admitted through the
    /// daemon's `CommandGate`, one at a time on this connection; its reply is written on this
    /// connection's event loop, and the next request waits for it.
    private func onDecidingThread(_ id: JSON?, _ start: @escaping @Sendable (@escaping @Sendable (Result<JSON, CommandError>) -> Void) -> Void) {
        guard let context else { return }
        handling = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let completion: @Sendable (Result<JSON, CommandError>) -> Void = { result in
            bound.eventLoop.execute {
                let handler = bound.value
                switch result {
                case .success(let value): handler.send(ClientProtocol.reply(id: id, result: value))
                case .failure(let error): handler.send(ClientProtocol.error(id: id, error.code, error.message))
                }
                handler.next()
            }
        }
        shared.deciderCommands.admit(on: context.eventLoop) {
            // The connection may have closed while it waited: nothing to run it for.
            guard bound.value.context != nil, !bound.value.closing else { return }
            start(completion)
        }
    }

    // MARK: Subscription

    private func subscribe(since: Int64) {
        guard let context else { return }
        queuedThrough = since
        writtenThrough = since
        subscription = .replaying
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        // Register first, read history second: nothing committed in between can fall in a gap.
        shared.hub.register(ObjectIdentifier(self), EventHub.Subscriber(eventLoop: context.eventLoop) { events in
            bound.value.deliver(events)
        })
        replayNextPage()
    }

    /// Live events from the hub.
    private func deliver(_ events: [LedgerEvent]) {
        switch subscription {
        case .none: return
        case .replaying:
            heldLive.append(contentsOf: events)
            // A client stuck in its replay holds live events too: they count against its bound.
            if queue.count + heldLive.count > shared.maximumQueuedEvents { overflow() }
        case .live:
            // A batch past the next seq follows events committed but never published (a commit
            // that landed though it reported a failure): they are read from the ledger first, as
            // history is, so a subscriber misses nothing.
            guard let next = followingOn(events) else {
                shared.logger.notice("events committed but not published: read from the ledger for a subscriber",
                                     metadata: ["from_seq": "\(queuedThrough + 1)", "to_seq": "\((events.first?.seq ?? 0) - 1)"])
                subscription = .replaying
                heldLive = events
                replayNextPage()
                return
            }
            enqueue(next)
            drain()
        }
    }

    /// The events past `queuedThrough`, if they run on from it without a break. The ledger's
    /// seqs have no holes and the hub is fed in seq order from one thread, so a break is an
    /// event committed but not published.
    private func followingOn(_ events: [LedgerEvent]) -> [LedgerEvent]? {
        let next = events.filter { $0.seq > queuedThrough }
        return next.enumerated().allSatisfy({ $0.element.seq == queuedThrough + 1 + Int64($0.offset) }) ? next : nil
    }

    private func replayNextPage() {
        guard case .replaying = subscription, !closing, !replayReading else { return }
        replayReading = true
        let (ledger, since, size) = (shared.ledger, queuedThrough, replayPageSize)
        offload({ try ledger.events(since: since, limit: size) }) { handler, result in
            handler.replayReading = false
            switch result {
            case .success(let page):
                handler.replayed(page, pageSize: size)
            case .failure(let error):
                handler.send(ClientProtocol.error(id: nil, .unavailable, "\(error)"))
                handler.context?.close(promise: nil)
            }
        }
    }

    private func replayed(_ page: [LedgerEvent], pageSize: Int) {
        guard case .replaying = subscription, !closing else { return }
        enqueue(page)
        if page.count < pageSize {
            // Caught up with the ledger as it was read: what arrived meanwhile follows, without
            // repeats, if it follows on without a break. A break is an event committed but not
            // published while the page was read; drain() reads on, and every held event is on
            // the ledger, so this ends.
            if let held = followingOn(heldLive) {
                subscription = .live
                heldLive = []
                enqueue(held)
            } else {
                heldLive.removeAll { $0.seq <= queuedThrough }
            }
        }
        drain()
    }

    private func enqueue(_ events: [LedgerEvent]) {
        for event in events where event.seq > queuedThrough {
            queuedThrough = event.seq
            // An accept is not money until the mech stores the coin (`coin`): shown on request.
            if !includePending, event.isPendingAccept { continue }
            queue.append(event)
        }
    }

    /// History is read a page at a time, and only while the queue is short, so replaying a long
    /// history never counts against the client.
    private var replayPageSize: Int { max(8, min(256, shared.maximumQueuedEvents / 4)) }

    /// Writes queued events while the socket takes them; reads more history when the queue is
    /// low; cuts the client off when the queue passes its bound.
    private func drain() {
        guard let context, !closing else { return }
        var wrote = false
        while context.channel.isWritable, !queue.isEmpty {
            let event = queue.removeFirst()
            context.write(wrapOutboundOut(line(ClientProtocol.event(event))), promise: nil)
            writtenThrough = event.seq
            wrote = true
        }
        if wrote { context.flush() }
        if queue.count > shared.maximumQueuedEvents { return overflow() }
        if case .replaying = subscription, queue.count < replayPageSize { replayNextPage() }
    }

    /// The client fell too far behind: tell it where to resume and hang up.
    private func overflow() {
        guard let context, !closing else { return }
        shared.logger.notice("subscriber too slow: disconnected", metadata: ["peer": "\(peer)", "resume_from": "\(writtenThrough)", "queued": "\(queue.count)"])
        closing = true
        queue.removeAll()
        heldLive.removeAll()
        shared.hub.unregister(ObjectIdentifier(self))
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(line(ClientProtocol.overflow(resumeFrom: writtenThrough)))).whenComplete { _ in
            channel.close(promise: nil)
        }
        // A client that reads nothing never takes the notice: close anyway after a grace period.
        context.eventLoop.scheduleTask(in: .seconds(10)) { channel.close(promise: nil) }
    }

    // MARK: Output

    private func send(_ message: JSON) {
        guard let context, !closing else { return }
        context.writeAndFlush(wrapOutboundOut(line(message)), promise: nil)
    }

    private func line(_ message: JSON) -> ByteBuffer {
        var buffer = context?.channel.allocator.buffer(capacity: 256) ?? ByteBuffer()
        buffer.writeString(message.description)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return buffer
    }
}
