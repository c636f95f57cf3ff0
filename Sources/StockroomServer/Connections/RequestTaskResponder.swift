import Hummingbird

/// Runs each request's responder chain (middleware, router, handler) in a child task of its
/// connection's task, instead of in the connection's task itself.
///
/// Why: Swift's task allocator keeps every slab a task has grown until the task ends. Run in the
/// connection's task, the deepest request a connection ever served (the middleware chain's async
/// frames) would stay allocated, and resident, for as long as the connection stays open, idle or
/// not. In a child task those frames go when the request ends; the connection keeps only its
/// own. An `async let` child costs no allocation of its own (its task lives in the parent's frame).
///
/// The child inherits the connection task's priority, task-local values and cancellation.
struct RequestTaskResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context: Sendable {
    typealias Context = Inner.Context
    let inner: Inner

    init(_ inner: Inner) {
        self.inner = inner
    }

    @Sendable func respond(to request: Request, context: Context) async throws -> Response {
        async let response = inner.respond(to: request, context: context)
        return try await response
    }
}
