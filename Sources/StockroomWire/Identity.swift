import Foundation
import StockroomCore

/// Who a token acts for (`GET /v1/users/me`).
public struct Identity: Hashable, Sendable, Codable {
    /// The user.
    public var user: UserID
    /// The token's role.
    public var role: Role
    /// The token's public identifier.
    public var tokenID: TokenID

    public init(user: UserID, role: Role, tokenID: TokenID) {
        self.user = user
        self.role = role
        self.tokenID = tokenID
    }
}

extension Identity: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"user":"#)
        json.string(user.rawValue)
        json.raw(#","role":"#)
        json.string(role.rawValue)
        json.raw(#","tokenID":"#)
        json.string(tokenID.rawValue)
        json.raw("}")
    }
}
