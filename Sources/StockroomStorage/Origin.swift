import Foundation
import StockroomCore

/// Who caused a write: recorded on every change entry so a device can recognise its own echoes.
public struct Origin: Hashable, Sendable {
    /// The user whose token made the request.
    public var user: UserID
    /// The device that sent it, for navigation commands.
    public var clientID: ClientID?
    /// The request's Idempotency-Key, if it had one.
    public var idempotencyKey: String?

    /// Creates an origin.
    public init(user: UserID, clientID: ClientID? = nil, idempotencyKey: String? = nil) {
        self.user = user
        self.clientID = clientID
        self.idempotencyKey = idempotencyKey
    }
}
