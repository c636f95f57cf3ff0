import Hummingbird
import HTTPTypes
import NIOCore
import StockroomStorage

/// `GET /v1/snapshot`: every item (matching `filter=`, when given) and the caller's devices at one
/// cursor, streamed as it is read; with `fromFilter=` or `since=`, the delta that changes a
/// client's filter in place (`{"items": [Item], "removed": [id], "cursor"}`), streamed too.
extension FeedController {
    @Sendable func snapshot(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        // A malformed cursor or filter text (400) before the filters' grammar (422), and a
        // fromFilter without a cursor (422: each parameter well-formed, the pair not) after them.
        let since = try request.query("since").map { try Self.parseStart($0, field: "since") }
        let filterText = try Self.filterText(request, name: "filter")
        let fromFilterText = try Self.filterText(request, name: "fromFilter")
        let filter = try Self.itemFilter(filterText, name: "filter")
        let fromFilter = try Self.itemFilter(fromFilterText, name: "fromFilter")
        if since == nil, fromFilter != nil {
            throw APIError.validationFailed("since", "fromFilter needs since: the cursor the client holds its items at")
        }
        let lease = try snapshotLimits.acquire(token: caller.id)
        if let since {
            let pipe = database.streamRefilter(
                from: fromFilter, to: filter, since: try await database.resolve(since), depth: 4, stallTimeout: settings.writeTimeout)
            return try await streamed(
                pipe, lease: lease, headers: [.contentType: Reply.jsonContentType, .cacheControl: "no-store"], context: context)
        }
        let pipe = database.streamSnapshot(user: caller.user, items: filter, depth: 4, stallTimeout: settings.writeTimeout)
        return try await streamed(pipe, lease: lease, headers: [.contentType: Reply.jsonContentType, .cacheControl: "no-store"], context: context)
    }

    /// A response whose body is `pipe`'s chunks, written as they come: the first chunk is awaited
    /// before answering (it comes once the read transaction holds: a storage failure is still a
    /// status); a client that stops reading is cut off after the write timeout. `lease`, the
    /// read's place under `snapshotLimits`, is given back when the body ends (or is never run).
    func streamed(
        _ pipe: ChunkPipe, lease: SubscriberLimits.Lease, headers: HTTPFields, context: CallerContext,
        first received: (([UInt8]) -> HTTPFields)? = nil
    ) async throws -> Response {
        // Whoever drops the response without running its body (a connection closed first) still ends the read.
        let owner = PipeOwner(pipe)
        // The first chunk comes once the read transaction holds: a storage failure is still a status.
        let first: [UInt8]
        do {
            first = try await pipe.next() ?? []
        } catch {
            pipe.cancel()
            throw error
        }
        let writeTimeout = settings.writeTimeout
        let channel = context.channel
        let logger = context.logger
        var headers = headers
        if let received { headers.append(contentsOf: received(first)) }
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                Self.snapshotStreams.add(1)
                defer {
                    Self.snapshotStreams.add(-1)
                    owner.pipe.cancel()
                    lease.release()
                }
                let box = BodyWriterBox(writer)
                do {
                    var chunk: [UInt8]? = first
                    while let bytes = chunk {
                        // A client that stops reading is cut off after the write timeout, like a feed subscriber.
                        try await Self.withDeadline(writeTimeout) { try await box.write(ByteBuffer(bytes: bytes)) }
                        chunk = try await owner.pipe.next()
                    }
                } catch {
                    logger.debug("snapshot stream ended early", metadata: ["reason": "\(error)"])
                    // Headers are out: the only honest end is a cut connection, which no client takes for a whole body.
                    channel.close(mode: .all, promise: nil)
                    throw error
                }
                try await Self.withDeadline(writeTimeout) { try await box.finish() }
            }
        )
    }

    /// Snapshots being streamed now (each holds a read transaction).
    static let snapshotStreams = CountGauge(label: "stockroom_snapshot_streams")

    /// Runs `operation`, cancelling it and throwing `WriteTimeout` when it outlasts `timeout`.
    static func withDeadline(_ timeout: Duration, _ operation: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await operation()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let finished = try await group.next() ?? false
            group.cancelAll()
            guard finished else { throw WriteTimeout() }
        }
    }
}
