import Hummingbird
import StockroomCore

/// Refuses a caller whose role is below `role` with `403 forbidden`: the role checks of whole
/// routes (writing items, managing tokens, admin-only metrics). hummingbird-auth's `RolePolicy`
/// checks membership in a set of roles; Stockroom's roles are ordered (viewer < editor < admin).
struct RequireRole: RouterMiddleware {
    typealias Context = CallerContext

    let role: Role
    /// What the refusal says, after "role X may not ".
    let action: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard context.caller.role >= role else {
            throw APIError.forbidden("role \(context.caller.role.rawValue) may not \(action)")
        }
        return try await next(request, context)
    }
}
