import Hummingbird
import NIOCore
import ServiceLifecycle
import StockroomWire

/// `GET /v1/changes`: a page of changes, waiting up to `wait` seconds for one (long-poll).
extension FeedController {
    @Sendable func batch(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        let rawLimit = try request.intQuery("limit")
        let rawWait = try request.intQuery("wait")
        let parameters = try parameters(of: request)
        let device = try await device(parameters.clientID, user: caller.user)
        let filter = try filter(parameters, user: caller.user)
        let limit = try APIError.checked("limit", rawLimit, default: 100, in: 1...1000)
        let wait = try APIError.checked("wait", rawWait, default: 0, in: 0...60)
        let start = try await Subscription.resolve(parameters.start, filter: filter, in: database)
        let hold = FeedHold(
            lease: try limits.acquire(token: caller.id), device: device, user: caller.user, presence: presence, transport: .longPoll)
        defer { hold.release() }
        let subscription = database.hub.subscribe(start.filter)
        defer { subscription.cancel() }
        // A client that closes its side while the poll may wait ends the wait at once
        // (`inputClosed`), so its subscription and its place under the caps go with it.
        let watched = wait == 0 ? nil : streams.register(
            subscription: subscription, channel: context.channel, transport: .longPoll, close: { subscription.cancel() })
        defer { watched.map(streams.remove) }
        if watched != nil { InputClosedWatch.recheck(context.channel, onInputClosed: streams.inputClosed) }
        let token = TokenCheck(database: database, tokenID: caller.id)
        var page = try await start.read(after: start.seq, in: database, following: subscription) {
            try await database.readEncodedChanges(after: $0, filter: start.filter, limit: limit)
        }
        let deadline = ContinuousClock.now.advanced(by: .seconds(wait))
        // On graceful shutdown the wait ends at once (the subscription closes) and the poll is
        // answered with its batch so far, possibly empty, and its cursor: shutdown waits for no poll.
        var waited = false
        try await withGracefulShutdownHandler {
            // An empty page with more to read (a filter hid everything it looked at) answers at
            // once: its cursor moved.
            while page.count == 0, !page.hasMore, ContinuousClock.now < deadline {
                waited = true
                let woke = await subscription.wait(timeout: deadline - ContinuousClock.now)
                if Task.isCancelled || Task.isShuttingDownGracefully || subscription.isClosed { break }
                guard try await token.isLive() else { throw Self.revoked }
                if woke || ContinuousClock.now >= deadline {
                    page = try await start.read(after: page.cursor.seq, in: database, following: subscription) {
                        try await database.readEncodedChanges(after: $0, filter: start.filter, limit: limit)
                    }
                }
            }
        } onGracefulShutdown: {
            subscription.cancel()
        }
        // A token revoked while the request waited gets 401, never the changes. A poll that did
        // not wait answers with what it read right after authenticating: no second token read.
        if waited {
            guard try await token.isLive() else { throw Self.revoked }
        }
        Self.sent(page.count, transport: .longPoll)
        // Each change's value is spliced in as stored, not decoded and encoded again.
        var body = ByteBuffer()
        body.reserveCapacity(page.changesJSON.count + 160)
        body.writeStaticString(FeedBatchJSON.opening)
        body.writeBytes(page.changesJSON)
        body.writeBytes(FeedBatchJSON.closing(cursor: page.cursor, hasMore: page.hasMore))
        return Reply(status: .ok, headers: [.contentType: Reply.jsonContentType], body: body).response
    }
}
