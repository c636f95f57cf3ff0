import Foundation
import StockroomCore

/// A token just created: its secret is shown this once.
public struct NewToken: Hashable, Sendable, Codable {
    /// The token's public identifier.
    public var id: TokenID
    /// The user it acts for.
    public var user: UserID
    /// What it may do.
    public var role: Role
    /// The bearer secret.
    public var token: String
    /// When it was created.
    public var createdAt: Date

    public init(id: TokenID, user: UserID, role: Role, token: String, createdAt: Date) {
        self.id = id
        self.user = user
        self.role = role
        self.token = token
        self.createdAt = createdAt
    }
}

extension NewToken: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.tokenFields(id: id, user: user, role: role)
        json.raw(#","token":"#)
        json.string(token)
        json.raw(#","createdAt":"#)
        json.timestamp(createdAt)
        json.raw("}")
    }
}
