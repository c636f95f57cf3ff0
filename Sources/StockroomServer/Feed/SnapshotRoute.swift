import Hummingbird
import NIOCore

/// `GET /v1/snapshot`: every item and the caller's devices at one cursor, streamed as it is read.
extension FeedController {
    @Sendable func snapshot(_ request: Request, context: CallerContext) async throws -> Response {
        let caller = context.caller
        let pipe = database.streamSnapshot(user: caller.user, items: nil, depth: 4, stallTimeout: settings.writeTimeout)
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
        return Response(
            status: .ok,
            headers: [.contentType: Reply.jsonContentType, .cacheControl: "no-store"],
            body: ResponseBody { writer in
                Self.snapshotStreams.add(1)
                defer {
                    Self.snapshotStreams.add(-1)
                    owner.pipe.cancel()
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
