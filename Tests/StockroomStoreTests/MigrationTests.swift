import Foundation
import GRDB
import StockroomCore
import Testing

import StockroomStorage
import StockroomWire
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

/// A database file in a fresh temporary folder, migrated up to `migration` alone and given `rows`
/// there, then opened (so migrated the rest of the way) for `body`.
private func withDatabase(
    migratedUpTo migration: String, rows: @escaping @Sendable (Database) throws -> Void = { _ in },
    _ body: (AppDatabase) async throws -> Void
) async throws {
    try await withTemporaryFolder { folder in
        let path = folder.appendingPathComponent("stockroom.sqlite").path
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        do {
            let queue = try DatabaseQueue(path: path)
            try AppDatabase.migrator().migrate(queue, upTo: migration)
            try await queue.write(rows)
        }
        try await body(try AppDatabase.open(path: path))
    }
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

    /// 0006 keeps a decided request's answer as one opaque value the server wrote; the answers
    /// kept by older versions (status, headers and body in columns of their own) are rewritten
    /// into the server's form, `<status>\n<headers JSON>\n<body>`, byte for byte.
    @Test("0006 rewrites the stored answers of older versions into one opaque value")
    func storedAnswersOfOlderVersionsBecomeOpaqueBytes() async throws {
        try await withDatabase(migratedUpTo: "0005_lean_indexes", rows: { db in
            try db.execute(
                sql: """
                    INSERT INTO idempotency_records (user, scope, key, fingerprint, status, headers, body, created_at)
                    VALUES ('erin', 'items', 'k1', 'POST /v1/items {}', 201, '{"ETag":"\\"1\\""}', CAST(? AS BLOB), 5)
                    """, arguments: [#"{"name":"Tür"}"#])
        }) { database in
            let row = try #require(try database.writer.read { db in
                try Row.fetchOne(db, sql: "SELECT response, typeof(response) AS kind, created_at FROM idempotency_records")
            })
            let expected = "201\n" + #"{"ETag":"\"1\""}"# + "\n" + #"{"name":"Tür"}"#
            #expect(row["kind"] as String == "blob")
            #expect(Array(row["response"] as Data) == Array(expected.utf8))
            #expect(row["created_at"] as Int64 == 5)
            #expect(try database.appliedMigrations().contains("0006_opaque_replies_change_format"))
        }
    }

    /// 0007 rewrites the retained navigation values into change-value form 2: each gains its
    /// checkpoints and canonical url, and a delete alert its alert, naming the item while it lives.
    @Test("0007 rewrites the retained navigation values into form 2")
    func navigationValuesOfForm1BecomeForm2() async throws {
        let live = "6f1c2e4a-1111-4000-8000-000000000001"
        let gone = "6f1c2e4a-3333-4000-8000-000000000003"
        try await withDatabase(migratedUpTo: "0006_opaque_replies_change_format", rows: { db in
            try db.execute(
                sql: """
                    INSERT INTO items (seq, id, name, search_name, in_stock, quantity, version, created_at, updated_at)
                    VALUES (1, ?, 'Keyboard', 'keyboard', 1, 3, 1, 5, 5)
                    """, arguments: [live])
            for (seq, id) in [(1, live), (2, gone)] {
                let value = #"{"clientID":"phone","tab":"inventory","path":[{"item":{"id":"\#(live)"}}],"destination":{"deleteAlert":{"itemID":"\#(id)"}},"version":\#(seq),"updatedAt":"2026-11-22T06:00:00.123Z"}"#
                try db.execute(
                    sql: "INSERT INTO changes (seq, entity, op, entity_id, owner, value, at) VALUES (?, 'navigation', 'upsert', 'phone', 'erin', ?, 5)",
                    arguments: [seq, value])
            }
            try db.execute(sql: "INSERT INTO changes (seq, entity, op, entity_id, owner, value, at) VALUES (3, 'navigation', 'delete', 'tablet', 'erin', NULL, 5)")
        }) { database in
            let values = try await database.writer.read { db in try String?.fetchAll(db, sql: "SELECT value FROM changes ORDER BY seq") }
            #expect(values.count == 3 && values[2] == nil)
            let first = try #require(values[0])
            let second = try #require(values[1])
            let named = try JSONCoding.decoder().decode(Navigation.self, from: Data(first.utf8))
            #expect(named.state.destination == .deleteAlert(itemID: ItemID(live)!, alert: .deleteItem(name: "Keyboard")))
            let unnamed = try JSONCoding.decoder().decode(Navigation.self, from: Data(second.utf8))
            #expect(unnamed.state.destination == .deleteAlert(itemID: ItemID(gone)!, alert: .deleteItem(name: nil)))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])
            #expect(object["url"] as? String == "stockroom://inventory/items/\(live)/delete")
            #expect((object["checkpoints"] as? [String: Any])?.isEmpty == true)
            #expect(values[0] == String(decoding: named.jsonBytes, as: UTF8.self), "the bytes this version writes")
            let format = try await database.writer.read { db in
                try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'change_value_format'")
            }
            #expect(format == "2")
        }
    }

    /// 0008 makes the change log again to take presence entries: the rows stay, and so does the
    /// head of a log trimmed whole, which its max(seq) would not give back.
    @Test("0008 keeps the log's rows and its head, trimmed entries included")
    func presenceMigrationKeepsTheLogAndItsHead() async throws {
        try await withDatabase(migratedUpTo: "0007_navigation_values", rows: { db in
            try insertEntries(db, 1...5)
            // Trimmed as the store trims, from the oldest end: the first three.
            try db.execute(sql: "DELETE FROM changes WHERE seq <= 3")
            try db.execute(sql: "UPDATE meta SET value = '3' WHERE key = 'trimmed_through'")
        }) { database in
            let (head, seqs) = try await database.writer.read { db in
                (try ChangeLog.head(db), try Int64.fetchAll(db, sql: "SELECT seq FROM changes ORDER BY seq"))
            }
            #expect(head == 5 && seqs == [4, 5])
            #expect(try await appendPresence(database) == 6, "a presence entry is taken, after the head")
        }
    }

    /// 0012 drops AUTOINCREMENT: `ChangeLog.append` numbers an entry one past the newest retained
    /// one, or past `trimmed_through` when the log is trimmed whole. Its counter is carried over
    /// in each state a file can be in, so no seq is given twice.
    @Test(
        "0012: without the log's counter the next entry comes after the head, whether entries are kept, the log is trimmed whole, or its newest were deleted by hand",
        arguments: [
            // (deleted before the migration, trimmed_through) -> (seqs kept, trimmed_through after)
            ("seq <= 2", 2, [3, 4, 5] as [Int64], 2 as Int64),
            ("seq <= 5", 5, [], 5),
            // Not a state the store makes (it trims from the oldest end): the log is trimmed through the counter.
            ("seq > 3", 0, [], 5),
        ])
    func seqWithoutCounterContinuesTheLog(deleted: String, trimmed: Int, kept: [Int64], trimmedAfter: Int64) async throws {
        try await withDatabase(migratedUpTo: "0011_changes_entity_check_compared", rows: { db in
            try insertEntries(db, 1...5)
            try db.execute(sql: "DELETE FROM changes WHERE \(deleted)")
            try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'trimmed_through'", arguments: ["\(trimmed)"])
        }) { database in
            func read() async throws -> (head: Int64, seqs: [Int64], trimmed: Int64, counters: Int, definition: String) {
                try await database.writer.read { db in
                    (
                        try ChangeLog.head(db), try Int64.fetchAll(db, sql: "SELECT seq FROM changes ORDER BY seq"),
                        try AppDatabase.trimmedThrough(db), try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_sequence") ?? -1,
                        try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE name = 'changes'") ?? ""
                    )
                }
            }
            let migrated = try await read()
            #expect(migrated.head == 5 && migrated.seqs == kept && migrated.trimmed == trimmedAfter)
            #expect(migrated.counters == 0 && !migrated.definition.contains("AUTOINCREMENT"))
            #expect(try await appendPresence(database) == 6)
            #expect(try await appendPresence(database) == 7)
            let after = try await read()
            #expect(after.head == 7 && after.seqs == kept + [6, 7] && after.counters == 0, "no counter kept: \(after)")
            let check = try await database.writer.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            #expect(check == ["ok"])
        }
    }

    @Test("0009: entries from before it say the item before them was not recorded; new ones record it")
    func previousValuesMigrationMarksOlderEntriesUnknown() async throws {
        try await withDatabase(migratedUpTo: "0008_presence", rows: { db in
            try db.execute(
                sql: "INSERT INTO changes (seq, entity, op, entity_id, owner, value, at) VALUES (1, 'item', 'delete', 'x', NULL, NULL, 5)")
        }) { database in
            let created = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Origin(user: "erin"), idempotency: nil).value
            _ = try await database.updateItem(created.id, draft: Sample.mouse, precondition: nil, origin: Origin(user: "erin"), idempotency: nil)
            let page = try await database.readLoggedChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item]), limit: 10)
            #expect(page.changes.map(\.before) == [.unknown, .none, .item(json: String(decoding: created.jsonBytes, as: UTF8.self))])
        }
    }

    /// A device's rows of `client_item_refs` are deleted by device when the device is deleted (the
    /// cascade) and when a write replaces the references of a device it did not read; the primary key
    /// leads with the item, so without an index by device that delete reads the whole table.
    @Test("0010: a device's item references are found by device through an index, on a file migrated from 0009")
    func itemReferencesAreDeletedByDeviceThroughAnIndex() async throws {
        try await withDatabase(migratedUpTo: "0009_previous_values") { database in
            let keyboard = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin("erin-phone"), idempotency: nil).value
            let mouse = try await database.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin("erin-phone"), idempotency: nil).value
            _ = try await database.runCommand(.push(route: .item(id: keyboard.id)), clientID: "erin-phone", origin: Sample.erin("erin-phone"))
            _ = try await database.runCommand(.push(route: .item(id: mouse.id)), clientID: "erin-laptop", origin: Sample.erin("erin-laptop"))
            let plan = try await database.writer.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + ClientItemRefRecord.deleteSQL, arguments: ["erin-phone"])
                    .map { $0["detail"] as String }
            }
            #expect(plan == ["SEARCH client_item_refs USING COVERING INDEX client_item_refs_client (client_id=?)"])
            // Leaving one device's item deletes its reference and no other.
            _ = try await database.runCommand(.pop, clientID: "erin-phone", origin: Sample.erin("erin-phone"))
            let refs = try await database.writer.read { db in
                try Row.fetchAll(db, sql: "SELECT client_id, item_id FROM client_item_refs ORDER BY client_id")
                    .map { [$0["client_id"] as String, $0["item_id"] as String] }
            }
            #expect(refs == [["erin-laptop", mouse.id.description]])
        }
    }

    /// SQLite checks `x IN (three or more constants)` through a temporary table it builds for each
    /// statement: with the log's entity check written so, every append built one. 0011 edits the
    /// table's definition in place; the entries stay, the check still refuses another entity.
    @Test("0011: the log's entity check compares, with no temporary table per append, on a file migrated from 0010")
    func theLogsEntityCheckComparesWithoutATemporaryTable() async throws {
        try await withDatabase(migratedUpTo: "0010_client_item_refs_by_client") { database in
            let keyboard = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin("erin-phone"), idempotency: nil).value
            _ = try await database.runCommand(.openEdit(itemID: keyboard.id), clientID: "erin-phone", origin: Sample.erin("erin-phone"))
            let (definition, opcodes, refusal) = try await database.writer.write { db in
                let definition = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'changes'") ?? ""
                let opcodes = try StatementPlanTests.explain(db, "EXPLAIN", ChangeLog.appendSQL, column: "opcode")
                let refusal: DatabaseError? = {
                    do {
                        try db.execute(sql: "INSERT INTO changes (entity, op, entity_id, at) VALUES ('token', 'upsert', 'x', 1)")
                        return nil
                    } catch let error as DatabaseError { return error } catch { return nil }
                }()
                return (definition, opcodes, refusal)
            }
            #expect(definition.contains("CHECK (entity = 'item' OR entity = 'navigation' OR entity = 'presence')"))
            #expect(!definition.contains("entity IN"))
            #expect(opcodes.contains("Insert") && !opcodes.contains("OpenEphemeral"), "\(opcodes)")
            #expect(refusal?.resultCode == .SQLITE_CONSTRAINT)
            // The entries from before it, and new ones of every entity, through the writer and a reader.
            _ = try await database.runCommand(.save(), clientID: "erin-phone", origin: Sample.erin("erin-phone"))
            let page = try await database.readLoggedChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item, .navigation]), limit: 10)
            #expect(page.changes.map(\.seq) == [1, 2, 3, 4])
            #expect(page.changes.map(\.entity) == [.item, .navigation, .item, .navigation])
        }
    }

    /// 0013 gives each lease its holder: a lease from before it is its device's owner's, so a feed
    /// open across the upgrade keeps its device online.
    @Test("0013: a lease from before it is its device's owner's, on a file migrated from 0012")
    func leasesFromBeforeOwnersAreTheirDevicesOwners() async throws {
        let until = Timestamp.milliseconds(Date().addingTimeInterval(3_600))
        try await withDatabase(migratedUpTo: "0012_changes_seq_without_counter", rows: { db in
            try db.execute(sql: "INSERT INTO devices_seen (client_id, owner, last_seen_at, online) VALUES ('phone', 'erin', 5, 1)")
            try db.execute(sql: "INSERT INTO presence_leases (client_id, daemon, expires_at) VALUES ('phone', 'a', ?)", arguments: [until])
        }) { database in
            let owners = try await database.writer.read { db in try String.fetchAll(db, sql: "SELECT owner FROM presence_leases") }
            #expect(owners == ["erin"])
            #expect(try await database.presence(of: ["phone"], user: "erin", now: Date())["phone"]?.online == true)
        }
    }

    /// The change log's values are spliced into feed answers as stored: a file whose values are in
    /// a form this version does not write is refused at open, not served.
    @Test("a file whose change log values are in another form is refused")
    func aChangeValueFormatOtherThanOursIsRefused() async throws {
        let refusal = try await Self.refusal(ofAFileAfter: "UPDATE meta SET value = '3' WHERE key = 'change_value_format'")
        #expect(refusal.error.contains("the change log's values are in form 3"))
    }

    @Test("a file a newer stockroom migrated is refused, and left as it was")
    func aFileMigratedByANewerVersionIsRefused() async throws {
        let refusal = try await Self.refusal(ofAFileAfter: "INSERT INTO grdb_migrations (identifier) VALUES ('9999_from_the_future')")
        #expect(refusal.error.contains("migrated by a newer stockroom (migrations 9999_from_the_future are unknown to this one)"))
        #expect(refusal.migrations == (try migrationFilesInSourceTree()) + ["9999_from_the_future"])
    }

    /// A new file, `sql` run on it, then opened again: the error it was refused with, and the
    /// migrations it records after.
    static func refusal(ofAFileAfter sql: String) async throws -> (error: String, migrations: [String]) {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            do {
                let database = try AppDatabase.open(path: path)
                try await database.writer.write { db in try db.execute(sql: sql) }
            }
            var error = ""
            do {
                _ = try AppDatabase.open(path: path)
                Issue.record("the file was opened")
            } catch let refused {
                error = "\(refused)"
            }
            let queue = try DatabaseQueue(path: path)
            return (error, try await queue.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") })
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

    /// A file removed under the server (its folder deleted) or replaced (another file renamed
    /// over it) takes writes that no restart and no other process sees: the probe behind `/ready`
    /// says so, and is ready again for neither.
    @Test("the write probe is not ready once the file was removed or replaced")
    func theWriteProbeNoticesARemovedOrReplacedFile() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("data/stockroom.sqlite").path
            let database = try AppDatabase.open(path: path)
            #expect(await database.writeProbe() == nil)
            try FileManager.default.moveItem(atPath: path, toPath: path + ".moved")
            #expect(await database.writeProbe()?.contains("was removed or replaced") == true)
            // A new file at the path is not the one the server writes either.
            _ = try AppDatabase.open(path: path)
            #expect(await database.writeProbe()?.contains("was removed or replaced") == true)
            try FileManager.default.removeItem(atPath: folder.appendingPathComponent("data").path)
            #expect(await database.writeProbe()?.contains("was removed or replaced") == true)
        }
    }
}

/// Log entries at the given seqs, as a file of an older version holds them.
private func insertEntries(_ db: Database, _ seqs: ClosedRange<Int>) throws {
    for seq in seqs {
        try db.execute(
            sql: "INSERT INTO changes (seq, entity, op, entity_id, owner, value, at) VALUES (?, 'item', 'delete', 'x', NULL, NULL, 5)",
            arguments: [seq])
    }
}

/// Appends one presence entry through the store's own append; returns its seq.
private func appendPresence(_ database: AppDatabase) async throws -> Int64 {
    try await database.writer.write { [observer = database.observer] db in
        try ChangeLog.append(
            db, entity: .presence, op: .upsert, id: "phone", owner: "erin",
            value: Presence(clientID: "phone", online: true, lastSeenAt: nil), origin: Origin(user: "erin"), at: 6, observer: observer)
    }
}
