import NIOCore
import ServiceLifecycle
import StockroomCore
import StockroomStorage
import StockroomWire

extension FeedController {
    enum FollowEvent: Sendable {
        case open
        /// One page of changes, in commit order (one write where the transport allows).
        case changes([ChangeEntry])
        case heartbeat
        /// Under an item filter, an idle stream's cursor moved past changes the filter hid.
        case progress(FeedCursor)
        /// The answer to a filter changed in place (`FilterControl`): the changes after its cursor
        /// follow the new filter.
        case refilter(Refilter)
        case resync(String)
        /// The stream's token was revoked: the stream ends with `unauthorized`.
        case revoked
    }

    /// Delivers every visible change after `start` in commit order, then waits for commits, with a
    /// heartbeat when idle. Ends on graceful shutdown, when a write has not finished within the write
    /// timeout (a stalled subscriber is cut off, bounding what it holds; it resumes from its cursor),
    /// or when its cursor is trimmed away. Runs in the caller's task alone: `streams` keeps the
    /// heartbeat and the write timeout for every stream in one sweep.
    static func follow(
        database: any Storage, streams: FeedStreams, start: Subscription, tokenID: TokenID, settings: FeedSettings,
        transport: FeedTransport, channel: any Channel, control: FilterControl? = nil,
        send: @escaping @Sendable (FollowEvent) async throws -> Void
    ) async throws {
        let subscription = database.hub.subscribe(start.filter)
        control?.attach(subscription)
        let token = TokenCheck(database: database, tokenID: tokenID)
        let stream = streams.register(subscription: subscription, channel: channel, transport: transport)
        defer {
            streams.remove(stream)
            subscription.cancel()
        }
        // A client that goes away ends the stream at once, not at its next heartbeat's failed write.
        channel.closeFuture.whenComplete { _ in subscription.cancel() }
        let watch = stream.watch
        let deliver: @Sendable (FollowEvent) async throws -> Void = { event in
            watch.begin()
            defer { watch.end() }
            // Writes into an unwritable channel would only grow NIO's buffer: wait for the client to
            // drain it (the sweep cuts it off, closing the channel, if it never does).
            while !channel.isWritable, channel.isActive, !subscription.isClosed {
                try await ProtocolSwitchHandler.untilWritable(channel)
                try Task.checkCancellation()
            }
            try await send(event)
        }
        do {
            // On graceful shutdown the subscription closes: the loop ends at its next step.
            try await withGracefulShutdownHandler {
                try await deliver(.open)
                var seq = start.seq
                var announced = start.seq
                var filter = start.filter
                var idle = false
                while !Task.isCancelled, !subscription.isClosed {
                    if case .some(let items) = control?.take() {
                        // Asked before the change, which forgets it: where no entry concerned the
                        // old filter since `seq`, the client held the same items there.
                        let unconcerned = database.hub.unconcerned(subscription, after: seq)
                        // The hub first, so that no commit after the delta's read goes unnoticed.
                        let next = FeedFilter(user: filter.user, topics: filter.topics, items: items)
                        database.hub.change(subscription, to: next)
                        let delta: Refilter
                        do {
                            delta = try await Subscription.pastTrimmed(after: seq, unconcerned: { unconcerned }) {
                                try await database.refilter(from: filter.items, to: items, since: $0)
                            }
                        } catch StoreError.resyncRequired(let message) {
                            try await deliver(.resync(message))
                            return
                        }
                        try await deliver(.refilter(delta))
                        filter = next
                        seq = delta.cursor.seq
                        announced = seq
                        // The delta holds every item the new filter shows through its cursor.
                        subscription.read(through: seq)
                    }
                    let page: FeedPage
                    do {
                        page = try await start.read(after: seq, in: database, following: subscription) {
                            try await database.readChanges(after: $0, filter: filter, limit: 200)
                        }
                    } catch StoreError.resyncRequired(let message) {
                        try await deliver(.resync(message))
                        return
                    }
                    // After the read: a change committed after a revocation reaches the hub only
                    // after the revocation's generation does, so it is never delivered.
                    guard try await token.isLive() else {
                        try await deliver(.revoked)
                        return
                    }
                    if let last = page.changes.last {
                        try await deliver(.changes(page.changes))
                        announced = last.seq
                        sent(page.changes.count, transport: transport)
                    }
                    seq = page.cursor.seq
                    if page.hasMore { continue }
                    if idle {
                        // Idle: ask the database itself, for a revocation by another process.
                        guard try await token.isLive(force: true) else {
                            try await deliver(.revoked)
                            return
                        }
                        // As the SSE stream's: the cursor past entries the stream hid.
                        if seq > announced {
                            try await deliver(.progress(page.cursor))
                            announced = seq
                        } else {
                            try await deliver(.heartbeat)
                        }
                    }
                    idle = !(await subscription.wait(until: .now + settings.heartbeat))
                }
            } onGracefulShutdown: {
                subscription.cancel()
            }
        } catch {
            // The sweep closed the connection under a stuck write: say so, whatever the write threw.
            if stream.wasCutOff { throw WriteTimeout() }
            throw error
        }
        if stream.wasCutOff { throw WriteTimeout() }
    }

    struct WriteTimeout: Error {}
}
