import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import StockroomServer

/// `RequestTaskResponder`: the request's responder chain runs in a task of its own (so that its
/// frames go with it, not with the connection's task), and answers as the chain would.
@Suite("Each request in a child task")
struct RequestTaskResponderTests {
    @TaskLocal static var marker: String?

    final class TaskRecord: @unchecked Sendable {
        // Written by the inner responder, read after `respond` returned: never at once.
        var innerTask: UnsafeCurrentTask?
        var sawMarker: String?
        var sawCancellation = false
    }

    static func request(_ path: String = "/") -> Request {
        Request(head: .init(method: .get, scheme: nil, authority: "example.com", path: path), body: .init(buffer: ByteBuffer()))
    }

    static func context() -> BasicRequestContext {
        BasicRequestContext(source: ApplicationRequestContextSource(channel: EmbeddedChannel(), logger: Logger(label: "test")))
    }

    @Test func theChainRunsInAChildTaskThatSeesTheConnectionsTaskLocals() async throws {
        let record = TaskRecord()
        let responder = RequestTaskResponder(
            CallbackResponder<BasicRequestContext> { request, _ in
                record.innerTask = withUnsafeCurrentTask { $0 }
                record.sawMarker = Self.marker
                return Response(status: .accepted, headers: [.location: request.uri.path])
            })
        let (response, outerTask) = try await Self.$marker.withValue("connection") {
            (try await responder.respond(to: Self.request("/items"), context: Self.context()), withUnsafeCurrentTask { $0 })
        }
        #expect(response.status == .accepted)
        #expect(response.headers[.location] == "/items")
        let inner = try #require(record.innerTask)
        let outer = try #require(outerTask)
        #expect(inner != outer)
        #expect(record.sawMarker == "connection")
    }

    @Test func anErrorOfTheChainReachesTheCaller() async throws {
        let responder = RequestTaskResponder(
            CallbackResponder<BasicRequestContext> { _, _ in throw HTTPError(.conflict, message: "stale") })
        await #expect(throws: HTTPError.self) {
            try await responder.respond(to: Self.request(), context: Self.context())
        }
    }

    @Test func cancellingTheConnectionsTaskCancelsTheRequest() async throws {
        let record = TaskRecord()
        let started = AsyncStream<Void>.makeStream()
        let responder = RequestTaskResponder(
            CallbackResponder<BasicRequestContext> { _, _ in
                started.continuation.yield()
                do {
                    try await Task.sleep(for: .seconds(60))
                } catch is CancellationError {
                    record.sawCancellation = true
                    throw CancellationError()
                }
                return Response(status: .ok)
            })
        let connection = Task { try await responder.respond(to: Self.request(), context: Self.context()) }
        var iterator = started.stream.makeAsyncIterator()
        await iterator.next()
        connection.cancel()
        await #expect(throws: CancellationError.self) { try await connection.value }
        #expect(record.sawCancellation)
    }
}
