import Foundation

/// Who a token acts for (`GET /v1/users/me`).
public struct Identity: Hashable, Sendable, Codable {
    /// The user.
    public var user: UserID
    /// The token's role.
    public var role: Role
    /// The token's public identifier.
    public var tokenID: TokenID
}
