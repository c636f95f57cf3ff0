import Foundation
import GRDB
import StockroomStorage

extension AppDatabase {

    /// Creates many items in one transaction (one commit, one fsync), each checked on its own: an
    /// item that is refused (`alreadyExists`, invalid) is answered alone and the others are created.
    /// Answers in the order given. A storage failure fails the whole batch.
    @discardableResult
    public func createItems(_ items: [BatchItem], origin: Origin, idempotency: IdempotentRequest<[ItemCreation]>? = nil) async throws
        -> Replayable<[ItemCreation]>
    {
        try await perform(idempotency) { rows in try await WriteRules.createItems(rows, items, origin: origin) }
    }
}
