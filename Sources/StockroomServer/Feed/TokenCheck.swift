import StockroomCore
import StockroomStorage
import Synchronization

/// A stream's check of its own token: free while the token generation stands still, one
/// primary-key read when it moved (a revocation somewhere) or when asked to force it.
final class TokenCheck: Sendable {
    let database: any Storage
    let tokenID: TokenID
    private let verified = Mutex<Int64>(-1)

    init(database: any Storage, tokenID: TokenID) {
        self.database = database
        self.tokenID = tokenID
    }

    /// Whether `isLive()` would read the database: the token generation moved since the last check.
    var needsRead: Bool {
        let current = database.hub.tokenGeneration
        return verified.withLock { $0 != current }
    }

    func isLive(force: Bool = false) async throws -> Bool {
        let current = database.hub.tokenGeneration
        let moved = verified.withLock { verified in
            defer { verified = current }
            return verified != current
        }
        guard moved || force else { return true }
        return try await database.isLiveToken(id: tokenID)
    }
}
