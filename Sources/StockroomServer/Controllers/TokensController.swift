import Foundation
import Hummingbird
import StockroomCore
import StockroomWire
import StockroomStorage

/// `/v1/tokens`: admins create, list and revoke bearer tokens.
struct TokensController {
    let database: any Storage

    func addRoutes(to routes: RouterGroup<CallerContext>) {
        let admins = routes.group().add(middleware: RequireRole(role: .admin, action: "manage tokens"))
        admins.post(use: create)
        admins.get(use: list)
        admins.delete(":id", use: revoke)
    }

    @Sendable func create(_ request: Request, context: CallerContext) async throws -> Response {
        let body = try await request.decodeJSON(TokenRequestBody.self, context: context).value
        let user = try UserID(validating: body.user)
        let token = try await database.createToken(user: user, role: body.role)
        let created = NewToken(id: token.info.id, user: token.info.user, role: token.info.role, token: token.secret, createdAt: token.info.createdAt)
        return Reply.json(writing: created, status: .created, headers: [.location: "/v1/tokens/\(token.info.id)"]).response
    }

    @Sendable func list(_ request: Request, context: CallerContext) async throws -> Response {
        return Reply.json(writing: TokenList(tokens: try await database.listTokens())).response
    }

    @Sendable func revoke(_ request: Request, context: CallerContext) async throws -> Response {
        let raw = context.parameters.get("id") ?? ""
        guard try await database.revokeToken(id: TokenID(raw)) else { throw APIError.notFound("no token \(APIError.quoted(raw))") }
        return Reply.empty().response
    }
}
