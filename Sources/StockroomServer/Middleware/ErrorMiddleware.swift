import Hummingbird
import Logging

/// Turns every error into the contract's JSON error; anything unexpected is logged and answered 500.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let apiError = APIError(error)
            if apiError.status == .internalServerError {
                context.logger.error("unhandled error", metadata: ["error": "\(String(reflecting: error))"])
            }
            return apiError.reply.response
        }
    }
}
