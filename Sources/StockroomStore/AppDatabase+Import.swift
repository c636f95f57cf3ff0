import Foundation
import GRDB
import StockroomCore
import StockroomStorage

extension AppDatabase {

    /// Creates many items in one transaction (one commit, one fsync), each checked on its own: an
    /// item that is refused (`alreadyExists`, invalid) is answered alone and the others are created.
    /// Answers in the order given. A storage failure fails the whole batch.
    @discardableResult
    public func createItems(_ items: [BatchItem], origin: Origin, idempotency: IdempotentRequest<[ItemCreation]>? = nil) async throws
        -> Replayable<[ItemCreation]>
    {
        try await perform(idempotency) { db in try Self.applyCreateItems(db, items, origin: origin) }
    }

    /// `createItems` inside the caller's transaction.
    static func applyCreateItems(_ db: Database, _ items: [BatchItem], origin: Origin) throws -> [ItemCreation] {
        var outcomes: [ItemCreation] = []
        outcomes.reserveCapacity(items.count)
        for entry in items {
            // No savepoint per item: `createItem` refuses (exists, invalid) before it writes
            // anything, and any later failure is the storage's, which fails the whole batch. (A
            // savepoint each would make SQLite open a statement journal per item.)
            do {
                outcomes.append(.created(try applyCreateItem(db, id: entry.id, draft: entry.draft, origin: origin)))
            } catch let error as StoreError {
                outcomes.append(.refused(error))
            }
        }
        return outcomes
    }
}
