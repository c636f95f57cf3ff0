import Hummingbird
import Logging

/// Turns every error into the contract's JSON error; anything unexpected is logged and answered 500.
/// A path that exists under other methods answers `405 methodNotAllowed` with `Allow`.
/// A refused WebSocket upgrade request also hands its error to the upgrade, to close with.
/// An answer to `HEAD` keeps its status and headers (`Content-Length` included) and loses its
/// body, errors' too: the HTTP encoder of the server's pipeline does not know the request's method,
/// and a body after a `HEAD`'s answer would be read as the start of the next answer.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = self.response(for: error, request: request, context: context)
        }
        return request.method == .head ? response.createHeadResponse() : response
    }

    /// The error's answer. Synchronous and out of line, so that its locals live on the thread's
    /// stack while it runs, not in `handle`'s async frame, which every request allocates.
    @inline(never)
    private func response(for error: any Error, request: Request, context: Context) -> Response {
        var apiError = APIError(error)
        if let http = error as? HTTPError, http.status == .notFound, let route = routes.route(forPath: request.uri.path) {
            apiError = APIError(.methodNotAllowed, "\(request.method.rawValue) is not allowed here")
            apiError.headers[.allow] = route.methods.map(\.rawValue).joined(separator: ", ")
            // The metrics count it under its route, not as an unknown path.
            context.coreContext.endpointPath.value = route.path
        }
        if apiError.status == .internalServerError {
            context.logger.error("unhandled error", metadata: ["error": "\(String(reflecting: error))"])
        }
        // A WebSocket upgrade request is upgraded all the same, then closed with this error.
        context.webSocketUpgrade?.refuse(apiError)
        return apiError.reply.response
    }
}
