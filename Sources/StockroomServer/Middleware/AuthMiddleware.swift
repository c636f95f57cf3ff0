import Foundation
import Hummingbird
import StockroomStore

/// Authenticates `/v1` requests by bearer token (hashed lookup; a revoked token is refused at once).
/// Streaming routes also accept `?access_token=`, since browsers cannot set headers there.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let database: AppDatabase
    let queryTokenPaths: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let secret = bearerSecret(request) else {
            throw APIError.unauthorized("missing bearer token")
        }
        guard let token = try await database.authenticate(secret: secret) else {
            throw APIError.unauthorized("invalid or revoked token")
        }
        var context = context
        context.identity = token
        return try await next(request, context)
    }

    private func bearerSecret(_ request: Request) -> String? {
        if let secret = Self.headerSecret(request) { return secret }
        if queryTokenPaths.contains(request.uri.path), let secret = request.uri.queryParameters.get("access_token"), !secret.isEmpty {
            return String(secret)
        }
        return nil
    }

    /// The secret of an `Authorization: Bearer` header, if the request has one.
    static func headerSecret(_ request: Request) -> String? {
        if let header = request.headers[.authorization] {
            // `Bearer <secret>`, the scheme in any case, spaces around the secret ignored.
            let utf8 = header.utf8
            guard utf8.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
            let secret = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
            return secret.isEmpty ? nil : secret
        }
        return nil
    }
}
