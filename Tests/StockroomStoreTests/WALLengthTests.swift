import Foundation
import GRDB
import Testing

@testable import StockroomStore

/// When a checkpoint beside the writer is due: by the WAL's pages that no such checkpoint copied.
/// Writes that come while one runs keep the WAL from starting over, and its length alone would then
/// ask for a checkpoint at every pause (each syncing both files for the few pages written since).
@Suite("WAL length")
struct WALLengthTests {
    @Test("a checkpoint beside the writer is due again only after the mark's worth of pages it did not copy")
    func dueByThePagesNotCopied() throws {
        try withTemporaryFolderSync { folder in
            let writer = try DatabaseQueue(path: folder.appendingPathComponent("wal.sqlite").path)
            try writer.writeWithoutTransaction { db in _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
            let wal = WALLength(on: writer)
            try writer.write { db in try db.execute(sql: "CREATE TABLE t (x BLOB)") }
            // Each row a page of its own, so that the WAL grows by about a page per commit.
            func commit(_ count: Int) throws {
                for _ in 0..<count { try writer.write { db in try db.execute(sql: "INSERT INTO t VALUES (zeroblob(5000))") } }
            }
            while wal.length < WALLength.checkpointPages { try commit(50) }
            #expect(wal.checkpointDue)

            // A checkpoint copied what was there; writes went on, so the WAL did not start over.
            let copied = wal.length
            wal.checkpointed(frames: copied)
            try commit(10)
            #expect(wal.length > copied)
            #expect(!wal.checkpointDue, "due again for the few pages written since the checkpoint")
            while wal.length < copied + WALLength.checkpointPages { try commit(50) }
            #expect(wal.checkpointDue)
            #expect(!wal.checkpointOverdue)

            // Copied all, with no write in between: the next commit starts the WAL over, and the
            // pages copied before count no more.
            let all = try writer.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            wal.checkpointed(frames: all.checkpointedFrameCount)
            try commit(1)
            #expect(wal.length < 20)
            while wal.length < WALLength.checkpointPages { try commit(50) }
            #expect(wal.checkpointDue)
        }
    }
}

/// A fresh folder, removed afterwards (synchronous bodies).
private func withTemporaryFolderSync<T>(_ body: (URL) throws -> T) throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-wal-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try body(folder)
}
