import Logging
import ServiceLifecycle
import StockroomStorage

/// Trims the change log and purges expired idempotency records on a schedule, and checkpoints
/// the database on shutdown, after the HTTP server has finished its in-flight requests.
struct DatabaseMaintenanceService: Service {
    let database: any Storage
    let idempotencyRetention: Duration
    let feed: FeedSettings
    let logger: Logger

    func run() async throws {
        await repeatUntilShutdown(every: feed.trimInterval) {
            do {
                let purged = try await database.purgeIdempotencyRecords(olderThan: idempotencyRetention)
                if purged > 0 { logger.info("purged expired idempotency records", metadata: ["count": "\(purged)"]) }
                let trimmed = try await database.trimChanges(maxAge: feed.retentionMaxAge, maxEntries: feed.retentionMaxEntries)
                if trimmed > 0 { logger.info("trimmed the change log", metadata: ["count": "\(trimmed)"]) }
            } catch {
                logger.warning("maintenance failed; retrying next round", metadata: ["error": "\(error)"])
            }
        }
        database.hub.closeAll()
        do {
            if try database.checkpoint() { logger.info("database checkpointed") }
        } catch {
            logger.warning("checkpoint on shutdown failed", metadata: ["error": "\(error)"])
        }
    }
}
