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
    public var revokedAt: Date?

    /// Creates token information.
    public init(id: TokenID, user: UserID, role: Role, createdAt: Date, revokedAt: Date?) {
        self.id = id
        self.user = user
        self.role = role
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    private enum CodingKeys: String, CodingKey { case id, user, role, createdAt, revokedAt }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try c.decode(TokenID.self, forKey: .id), user: try c.decode(UserID.self, forKey: .user), role: try c.decode(Role.self, forKey: .role),
            createdAt: try c.decode(Date.self, forKey: .createdAt), revokedAt: try c.decodeNullable(Date.self, forKey: .revokedAt))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(user, forKey: .user)
        try c.encode(role, forKey: .role)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encodeNullable(revokedAt, forKey: .revokedAt)
    }
}

extension TokenInfo: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.tokenFields(id: id, user: user, role: role)
        json.raw(#","createdAt":"#)
        json.timestamp(createdAt)
        json.raw(#","revokedAt":"#)
        json.timestamp(revokedAt)
        json.raw("}")
    }
}

extension JSONWriter {
    /// `{"id":…,"user":…,"role":…`: the fields a token's answers (`TokenInfo`, `NewToken`) begin with.
    mutating func tokenFields(id: TokenID, user: UserID, role: Role) {
        raw(#"{"id":"#)
        string(id.rawValue)
        raw(#","user":"#)
        string(user.rawValue)
        raw(#","role":"#)
        string(role.rawValue)
    }
}
