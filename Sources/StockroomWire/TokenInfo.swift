import Foundation
import StockroomCore

/// A bearer token as listed: never its secret.
public struct TokenInfo: Sendable, Hashable, Codable {
    /// The token's public identifier.
    public var id: TokenID
    /// The user the token acts for.
    public var user: UserID
    /// What the token may do.
    public var role: Role
    /// When it was created.
    public var createdAt: Date
    /// When it was revoked, if it was.
    @ExplicitNull public var revokedAt: Date?

    /// Creates token information.
    public init(id: TokenID, user: UserID, role: Role, createdAt: Date, revokedAt: Date?) {
        self.id = id
        self.user = user
        self.role = role
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}
