import Foundation
import StockroomCore

/// Where an Idempotency-Key lives: per user, and per client for commands.
public struct IdempotencyKey: Hashable, Sendable {
    /// The user whose token sent the request.
    public var user: UserID
    /// Item writes, or one client's commands.
    public var scope: IdempotencyScope
    /// The key the client chose for the request.
    public var key: String

    /// Creates a key.
    public init(user: UserID, scope: IdempotencyScope, key: String) {
        self.user = user
        self.scope = scope
        self.key = key
    }

    /// How long a decided request's record is kept at least (the contract's minimum): a purge
    /// asked for less keeps this long.
    public static let minimumRetention: Duration = .seconds(24 * 3600)
}
