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
        try await perform(idempotency) { rows in
            try await rows.withBulkCache { try await WriteRules.createItems(rows, items, origin: origin) }
        }
    }
}

extension AppDatabase {
    public func importItems(
        _ spool: ItemImportSpool, rejectedBefore: Int, options: ItemImportOptions, origin: Origin,
        idempotency: IdempotentRequest<ItemImportResult>?
    ) async throws -> Replayable<ItemImportResult> {
        do {
            return try await perform(idempotency, position: { result, head in result.positioned(at: head) }) { rows in
                try await rows.withBulkCache {
                    try await WriteRules.importItems(
                        rows, next: { try self.shutdown.checkImport(); return try spool.next() }, rejectedBefore: rejectedBefore, options: options,
                        origin: origin)
                }
            }
        } catch let rolledBack as ItemImportRolledBack {
            return .fresh(rolledBack.result.positioned(at: try await resolve(.now)))
        }
    }
}
