import Foundation
import GRDB
import StockroomCore
import StockroomStorage
import StockroomWire
import Testing

@testable import StockroomStore

/// What only SQLite's tables and files show of items. Versions, ids, lists, refusals are in
/// StorageContractTests/ItemContractTests, on every backend.
@Suite("Items: create, update, delete, list")
struct ItemStoreTests {
    @Test("the row keeps the trimmed name, its lowercased search_name and the lowercase id; a delete leaves a tombstone of the last version")
    func rowsAndTombstone() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let id = ItemID("0A0B0C0D-0000-4000-8000-00000000000A")!
            let typed = Draft(name: "  Ärger Keyboard \n", color: nil, status: .outOfStock(isOnBackOrder: false))
            try await database.createItem(id: id, draft: typed, origin: Sample.erin)
            let rows = try await probe.itemRows()
            #expect(rows.count == 1)
            #expect(rows.first?["name"] as String? == "Ärger Keyboard")
            #expect(rows.first?["search_name"] as String? == "ärger keyboard")
            #expect(rows.first?["id"] as String? == "0a0b0c0d-0000-4000-8000-00000000000a")

            _ = try await database.updateItem(id, draft: Sample.bluetooth, precondition: nil, origin: Sample.erin)
            #expect(try await probe.itemRows().first?["search_name"] as String? == "bluetooth keyboard")
            try await database.deleteItem(id, precondition: .oneOf([2]), origin: Sample.erin)
            let tombstone = try #require(try await probe.itemRows().first)
            #expect(tombstone["deleted_at"] as Int64? != nil)
            #expect(tombstone["version"] as Int? == 2)
        }
    }

    @Test("an update writes the item's page and the log's: no page of the id index, none of a counter")
    func updateLeavesTheIdIndexAlone() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            let database = try AppDatabase.open(path: path)
            // Enough items for the table and its id index to span many pages, so that an update that
            // rewrote its index entry would dirty a page of its own.
            let ids: [ItemID] = try await database.write { db in
                try (0..<2_000).map { index in
                    try database.applyCreateItem(
                        db, id: nil, draft: Draft(name: "Item \(index)", color: nil, status: .inStock(quantity: index)), origin: Sample.erin
                    ).id
                }
            }
            try database.checkpoint()
            let wal = path + "-wal"
            func walSize() throws -> Int { (try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0 }
            let pageSize = try await database.writer.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") } ?? 0
            #expect(try walSize() == 0)

            // Two updates in a row: a split of the log's last page adds pages to at most one of them.
            var frames: [Int] = []
            var size = 32  // the WAL's header, written with its first frame
            for (index, id) in [ids[500], ids[1_500]].enumerated() {
                _ = try await database.updateItem(id, draft: Draft(name: "Renamed \(index)", color: nil, status: .inStock(quantity: 7)), precondition: nil, origin: Sample.erin)
                let now = try walSize()
                frames.append((now - size) / (pageSize + 24))
                size = now
            }
            #expect(frames.min() == 2, "WAL frames per update: \(frames)")
            #expect(try await database.item(ids[500])?.name == "Renamed 0")
        }
    }

    @Test("a batch create and an import run with the writer's larger cache and leave it at its usual size, a rolled-back import too")
    func bulkWritesGiveTheCacheBack() async throws {
        try await withTemporaryDatabase { database in
            func writerCache() throws -> Int? {
                try database.writer.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA cache_size") }
            }
            #expect(try writerCache() == -AppDatabase.writerCacheKiB)
            let created = try await database.createItems(
                (0..<20).map { BatchItem(id: nil, draft: Draft(name: "Item \($0)", color: nil, status: .inStock(quantity: $0))) },
                origin: Sample.erin
            ).value
            #expect(created.count == 20)
            #expect(try writerCache() == -AppDatabase.writerCacheKiB)

            func spool() throws -> ItemImportSpool {
                let spool = try ItemImportSpool()
                for line in 2..<12 { try spool.append(ItemImportRow(line: line, id: nil, version: nil, fields: try ValidDraft(Sample.mouse))) }
                try spool.finishWriting()
                return spool
            }
            let imported = try await database.importItems(
                try spool(), rejectedBefore: 0, options: ItemImportOptions(), origin: Sample.erin, idempotency: nil
            ).value
            #expect(imported.inserted == 10)
            #expect(try writerCache() == -AppDatabase.writerCacheKiB)
            let dryRun = try await database.importItems(
                try spool(), rejectedBefore: 0, options: ItemImportOptions(dryRun: true), origin: Sample.erin, idempotency: nil
            ).value
            #expect(dryRun.applied == false)
            #expect(try writerCache() == -AppDatabase.writerCacheKiB)
        }
    }
}
