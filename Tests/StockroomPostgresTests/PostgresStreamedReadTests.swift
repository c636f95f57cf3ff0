import Foundation
import StockroomCore
@testable import StockroomPostgres
import StockroomStorage
import TestSupport
import Testing

/// A snapshot or an export on PostgreSQL whose client stops reading, and whose PostgreSQL session
/// then ends under it.
@Suite("Streamed reads on PostgreSQL", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct PostgresStreamedReadTests {
    /// Given 20,000 items (about 8 MB of JSON, far more than the sockets between the daemon and
    /// PostgreSQL buffer), when a streamed read's consumer takes one chunk and stops, then the
    /// read's session is soon idle in its transaction, no query of it still sending rows (so
    /// `statement_timeout` does not cut a slow client's read, and a connection that closes has no
    /// row stream under it); and when PostgreSQL ends that session (as it does to a transaction
    /// idle past its timeout, or on a restart), the read ends with an error rather than waiting,
    /// and the daemon goes on answering.
    @Test(.timeLimit(.minutes(10)), arguments: ["snapshot", "export"])
    func aStalledReadWhoseSessionEndsFailsAlone(read: String) async throws {
        try await withDaemons(1) { stores, url in
            let store = stores[0]
            let name = String(repeating: "n", count: 190)
            for batch in 0..<20 {
                let items = (0..<1000).map { index in
                    BatchItem(id: nil, draft: Draft(name: "\(batch)-\(index) \(name)", color: nil, status: .inStock(quantity: index)))
                }
                _ = try await store.createItems(items, origin: Origin(user: "erin"), idempotency: nil)
            }
            let pipe =
                read == "snapshot"
                ? store.streamSnapshot(user: "erin", items: nil, depth: 1, stallTimeout: .seconds(300))
                : store.streamItems(
                    matching: nil, encoding: ItemStreamEncoding(header: { _ in Array("items\n".utf8) }, item: { item, json in item.write(to: &json) }),
                    depth: 1, stallTimeout: .seconds(300))
            let first = try await pipe.next()
            #expect(first?.isEmpty == false)

            // The read waits for its consumer between two queries: its session is idle. End it.
            try await withConnection(url) { connection in
                try await eventually("the read's session is ended") {
                    try await connection.values(
                        """
                        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE datname = current_database() AND pid <> pg_backend_pid()
                          AND state = 'idle in transaction' AND query LIKE '%FROM items WHERE deleted_at IS NULL%'
                        """, as: Bool.self
                    ).count == 1
                }
            }
            await #expect(throws: (any Error).self) {
                while try await pipe.next() != nil {}
            }
            // A call that took the ended session's connection before the pool saw it close is
            // unavailable (503, retried); the next ones are answered.
            try await eventually("the daemon answers writes") {
                let created = try? await store.createItem(
                    id: nil, draft: Draft(name: "After", color: nil, status: .inStock(quantity: 1)), origin: Origin(user: "erin"), idempotency: nil)
                return (try? created?.value.name) == "After"
            }
        }
    }
}
