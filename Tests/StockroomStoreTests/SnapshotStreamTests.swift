import Foundation
import GRDB
import StockroomCore
import StockroomWire
import TestSupport
import Testing

import StockroomStorage
@testable import StockroomStore

/// The streamed snapshot (issue #13): the same JSON as encoding the values, one read transaction,
/// a bounded hand-off that holds the reader, never the writer.
@Suite("Streamed snapshot")
struct SnapshotStreamTests {
    /// Names that need escaping, non-ASCII text, colours and both statuses.
    static let drafts: [Draft] = [
        Draft(name: #"Quote " and backslash \ and slash /"#, color: Color(name: "Tab\u{2003}Grey", red: 0.1, green: 0.25, blue: 1), status: .inStock(quantity: 0)),
        Draft(name: "\u{200F}RTL e\u{301} 🧑🏽‍💻", color: nil, status: .outOfStock(isOnBackOrder: true)),
        Draft(name: "Plain", color: Color(name: "Red", red: 1, green: 0, blue: 0), status: .inStock(quantity: 1_000_000_000)),
        Draft(name: "Back-ordered no", color: nil, status: .outOfStock(isOnBackOrder: false)),
    ]

    @Test func theStreamWritesWhatEncodingTheItemsWrites() async throws {
        try await withTemporaryDatabase(synchronous: .normal) { database in
            var created: [Item] = []
            for index in 0..<600 {
                created.append(try await database.createItem(id: nil, draft: Self.drafts[index % Self.drafts.count], origin: Sample.erin).value)
            }
            try await database.deleteItem(created[3].id, precondition: nil, origin: Sample.erin)
            created.remove(at: 3)
            _ = try await database.runCommand(.push(route: .item(id: created[0].id)), clientID: "phone", origin: Sample.erin("phone"))
            _ = try await database.runCommand(.openEdit(itemID: created[1].id), clientID: "tablet", origin: Sample.erin("tablet"))
            _ = try await database.runCommand(.selectTab(tab: .settings), clientID: "other", origin: Sample.otto("other"))

            // Byte for byte: the streamed JSON is what JSONWriter writes for the decoded values.
            let pipe = database.streamSnapshot(user: "erin", depth: 1)
            var bytes: [UInt8] = []
            var chunks = 0
            while let chunk = try await pipe.next() {
                bytes += chunk
                chunks += 1
            }
            #expect(chunks >= 3, "600 items are more than one 64 KiB chunk, after the opening one")
            let snapshot = try await database.snapshot(user: "erin")
            #expect(snapshot.items == created)
            #expect(snapshot.navigation.map(\.clientID) == ["tablet", "phone"])
            #expect(snapshot.cursor == FeedCursor(epoch: database.epoch, seq: database.hub.head))
            var expected = JSONWriter()
            expected.raw(#"{"items":["#)
            for (index, item) in created.enumerated() {
                if index > 0 { expected.raw(",") }
                item.write(to: &expected)
            }
            expected.raw(#"],"navigation":["#)
            for (index, navigation) in snapshot.navigation.enumerated() {
                if index > 0 { expected.raw(",") }
                navigation.write(to: &expected)
            }
            expected.raw(#"],"cursor":"#)
            expected.string(snapshot.cursor.encoded)
            expected.raw("}")
            #expect(String(decoding: bytes, as: UTF8.self) == expected.string)
        }
    }

    /// Given a snapshot whose consumer has taken one chunk and stopped, when writes come in, then
    /// they commit (the reader waits, the writer does not), the snapshot holds none of them, and
    /// the feed from its cursor holds exactly them.
    @Test func writesCommitWhileAConsumerHoldsTheStreamAndTheCursorIsExact() async throws {
        try await withTemporaryDatabase(synchronous: .normal) { database in
            var before: [Item] = []
            for index in 0..<1500 {
                before.append(try await database.createItem(id: nil, draft: Self.drafts[index % Self.drafts.count], origin: Sample.erin).value)
            }
            let head = database.hub.head
            let pipe = database.streamSnapshot(user: "erin", depth: 1)
            var bytes = try #require(try await pipe.next())

            let added = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.otto).value
            let updated = try await database.updateItem(before[0].id, draft: Sample.bluetooth, precondition: nil, origin: Sample.otto).value
            try await database.deleteItem(before[1].id, precondition: nil, origin: Sample.otto)
            #expect(database.hub.head == head + 3)

            while let chunk = try await pipe.next() { bytes += chunk }
            struct Body: Decodable {
                let items: [Item]
                let cursor: String
            }
            let body = try JSONCoding.decoder().decode(Body.self, from: Data(bytes))
            #expect(body.items == before)
            #expect(body.cursor == FeedCursor(epoch: database.epoch, seq: head).encoded)
            let replay = try await database.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)
            #expect(replay.changes.map(\.seq) == [head + 1, head + 2, head + 3])
            #expect(replay.changes.map(\.id) == [added.id.description, updated.id.description, before[1].id.description])
        }
    }

    @Test func aCancelledStreamEndsItsReadTransaction() async throws {
        try await withTemporaryDatabase(synchronous: .normal) { database in
            for index in 0..<1500 {
                _ = try await database.createItem(id: nil, draft: Self.drafts[index % Self.drafts.count], origin: Sample.erin)
            }
            let pipe = database.streamSnapshot(user: "erin", depth: 1)
            _ = try #require(try await pipe.next())
            _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.otto)
            // While the snapshot's reader holds its transaction, the WAL cannot be checkpointed past it.
            #expect(try await Self.walFramesLeft(database) > 0)
            pipe.cancel()
            await #expect(throws: CancellationError.self) { try await pipe.next() }
            // The reader gives its transaction back once it sees the cancel (it waits for no one).
            try await eventually("a checkpoint copies every WAL frame back") { try await Self.walFramesLeft(database) == 0 }
        }
    }

    /// WAL frames a passive checkpoint could not copy back: more than 0 while an older read transaction is open.
    /// While the server's own checkpointer (at NORMAL, on a connection of its own) runs one, this one
    /// cannot start and reports -1 for both counts: it is tried again then, up to 500 times.
    static func walFramesLeft(_ database: AppDatabase) async throws -> Int {
        for _ in 0..<500 {
            let counts = try await database.writer.writeWithoutTransaction { db in
                let row = try #require(try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)"))
                let log: Int = row[1]
                let checkpointed: Int = row[2]
                return (log: log, checkpointed: checkpointed)
            }
            if counts.log >= 0 { return counts.log - counts.checkpointed }
            try await Task.sleep(for: .milliseconds(2))
        }
        Issue.record("PRAGMA wal_checkpoint(PASSIVE) could not start in 500 tries")
        return -1
    }

    @Test func theEncodedFeedPageIsTheJoinedChangesOfEveryPage() async throws {
        try await withTemporaryDatabase(synchronous: .normal) { database in
            for index in 0..<12 {
                let item = try await database.createItem(
                    id: nil, draft: Self.drafts[index % Self.drafts.count], origin: Sample.erin(ClientID("phone-\(index)")!, key: "k\(index)")).value
                _ = try await database.runCommand(.push(route: .item(id: item.id)), clientID: "phone", origin: Sample.erin("phone"))
                _ = try await database.runCommand(.push(route: .item(id: item.id)), clientID: "tablet", origin: Sample.otto("tablet"))
                if index.isMultiple(of: 3) { try await database.deleteItem(item.id, precondition: nil, origin: Sample.otto) }
            }
            let head = database.hub.head
            let filters = [
                FeedFilter(user: "erin", topics: [.item, .navigation]), FeedFilter(user: "otto", topics: [.navigation]),
                FeedFilter(user: "erin", topics: [.item]), FeedFilter(user: "nobody", topics: []),
            ]
            for filter in filters {
                for limit in [1, 3, 1000] {
                    for seq in stride(from: 0, through: head, by: 5) {
                        let page = try await database.readLoggedChanges(after: seq, filter: filter, limit: limit)
                        let encoded = try await database.writer.read { db in
                            try AppDatabase.encodedLoggedChanges(db, after: seq, filter: filter, limit: limit, epoch: database.epoch)
                        }
                        #expect(encoded == EncodedFeedPage(page), "after \(seq), \(filter), limit \(limit)")
                    }
                }
            }
        }
    }
}
