import Foundation
import GRDB
import StockroomCore
import Testing

import StockroomStorage
@testable import StockroomStore

/// The identifiers of the files in `Migrations/sql`, read from the source tree, sorted by name.
private func migrationFilesInSourceTree() throws -> [String] {
    let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // StockroomStoreTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("Migrations/sql", isDirectory: true)
    return try FileManager.default.contentsOfDirectory(atPath: folder.path)
        .filter { $0.hasSuffix(".sql") }
        .map { String($0.dropLast(".sql".count)) }
        .sorted()
}

@Suite("Opening and migrating a database file")
struct MigrationTests {
    @Test("a new file gets every migration of Migrations/sql, in order")
    func newFileGetsEveryMigrationInOrder() async throws {
        let files = try migrationFilesInSourceTree()
        #expect(files.first == "0001_items_tokens_changes")
        #expect(files.contains("0002_navigation_idempotency"))
        try await withTemporaryDatabase { database in
            #expect(try database.appliedMigrations() == files)
            let recorded = try await database.writer.read { db in
                try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid")
            }
            #expect(recorded == files)
        }
    }

    @Test("the file is in WAL mode with foreign keys on, on the writer and on readers")
    func walModeAndForeignKeys() async throws {
        try await withTemporaryDatabase { database in
            let onWriter = try await database.writer.write { db in
                [try String.fetchOne(db, sql: "PRAGMA journal_mode"), try String.fetchOne(db, sql: "PRAGMA foreign_keys")]
            }
            let onReader = try await database.writer.read { db in
                [try String.fetchOne(db, sql: "PRAGMA journal_mode"), try String.fetchOne(db, sql: "PRAGMA foreign_keys")]
            }
            #expect(onWriter == ["wal", "1"])
            #expect(onReader == ["wal", "1"])
        }
    }

    // The writer connection is the one whose commits must be durable, so that is where it counts.
    @Test("synchronous is FULL (2) by default, on the connection that commits")
    func synchronousFullByDefault() async throws {
        try await withTemporaryDatabase { database in
            let onWriter = try await database.writer.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            let onReader = try await database.writer.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            #expect(onWriter == 2, "the writer commits with synchronous=\(onWriter.map(String.init) ?? "nil"), not FULL")
            #expect(onReader == 2)
        }
    }

    @Test("synchronous is NORMAL (1) when opened with .normal")
    func synchronousNormalWhenAsked() async throws {
        try await withTemporaryDatabase(synchronous: .normal) { database in
            let onWriter = try await database.writer.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            let onReader = try await database.writer.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            #expect(onWriter == 1)
            #expect(onReader == 1)
        }
    }

    @Test("the epoch is 32 lowercase hex characters, stored in meta, and differs between databases")
    func epochShape() async throws {
        try await withTemporaryDatabase { first in
            try await withTemporaryDatabase { second in
                #expect(first.epoch.count == 32)
                #expect(first.epoch.allSatisfy { "0123456789abcdef".contains($0) })
                let stored = try await first.writer.read { db in
                    try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'epoch'")
                }
                #expect(stored == first.epoch)
                #expect(first.epoch != second.epoch)
            }
        }
    }

    @Test("reopening a file keeps its epoch and data and applies no migration again")
    func reopenKeepsEpochAndDataAndAppliesNothing() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            let (epoch, item, migrations, migrationRows): (String, Item, [String], [PlainRow])
            do {
                let database = try AppDatabase.open(path: path)
                epoch = database.epoch
                item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
                migrations = try database.appliedMigrations()
                migrationRows = try await Probe(database).rows("SELECT * FROM grdb_migrations ORDER BY rowid")
                try database.checkpoint()
            }

            let reopened = try AppDatabase.open(path: path)
            #expect(reopened.epoch == epoch)
            #expect(try reopened.appliedMigrations() == migrations)
            let rowsAfter = try await Probe(reopened).rows("SELECT * FROM grdb_migrations ORDER BY rowid")
            #expect(rowsAfter == migrationRows)
            #expect(try await reopened.item(item.id) == item)
            #expect(try await Probe(reopened).changes() == [.itemUpsert(1, item, Sample.erin)])
        }
    }

    @Test("opening creates the missing parent folders of the file")
    func openCreatesParentFolders() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("a/b/c/stockroom.sqlite").path
            #expect(!FileManager.default.fileExists(atPath: folder.path))
            let database = try AppDatabase.open(path: path)
            #expect(FileManager.default.fileExists(atPath: path))
            #expect(try database.appliedMigrations() == migrationFilesInSourceTree())
            #expect(await database.isWritable())
        }
    }
}
