import Foundation
import GRDB
import StockroomCore
import Synchronization
import TestSupport
import Testing

import StockroomStorage
@testable import StockroomStore

/// A commit publishes the entries its writes handed the observer as they appended them, without
/// reading the log back; what it publishes is what the log holds, savepoints rolled back included.
@Suite("Entries published as appended")
struct AppendedEntriesTests {
    struct Boom: Error {}

    /// The feed's page after `seq` as the hub keeps it and as the log holds it.
    static func expectHubEqualsLog(_ database: AppDatabase, after seq: Int64, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let filter = FeedFilter(user: "erin", topics: [.item, .navigation])
        let logged = try await database.readLoggedChanges(after: seq, filter: filter, limit: 100)
        let recent = try #require(database.hub.recentChanges(after: seq, filter: filter, limit: 100), sourceLocation: sourceLocation)
        #expect(recent == logged, sourceLocation: sourceLocation)
        #expect(database.hub.head == logged.changes.last?.seq, sourceLocation: sourceLocation)
    }

    /// Item writes and commands, alone and queued together: the log's new entries are never read back.
    @Test func writesAndCommandsPublishWithoutReadingTheLog() async throws {
        let statements = Mutex<[String]>([])
        try await withTemporaryFolder { folder in
            let database = try openTracedDatabase(in: folder) { sql in statements.withLock { $0.append(sql) } }
            let head = database.hub.head
            statements.withLock { $0.removeAll() }
            let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            _ = try await database.runCommand(.openEdit(itemID: item.id), clientID: "phone", origin: Sample.erin("phone"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        let draft = Draft(name: "Keyboard \(index)", color: nil, status: .inStock(quantity: index))
                        _ = try await database.updateItem(item.id, draft: draft, precondition: nil, origin: Sample.erin)
                    }
                }
                try await group.waitForAll()
            }
            _ = try await database.runCommand(.cancel, clientID: "phone", origin: Sample.erin("phone"))
            try await database.deleteItem(item.id, precondition: nil, origin: Sample.erin)
            // The append's own look-up of the head (`ChangeLog.headSQL`, the last seq) reads no entry.
            let readBack = statements.withLock { $0 }.map { $0.replacingOccurrences(of: ChangeLog.headSQL, with: "") }
                .filter { $0.contains("FROM changes") || $0.contains("FROM \"changes\"") }
            #expect(readBack.isEmpty, "\(readBack)")
            try await Self.expectHubEqualsLog(database, after: head)
        }
    }

    /// Entries appended inside a savepoint that is rolled back are not published: neither one whose
    /// seq a later entry takes again, nor one appended last.
    @Test func entriesOfARolledBackSavepointAreNotPublished() async throws {
        try await withTemporaryDatabase { database in
            let head = database.hub.head
            let names = try await database.write { [observer = database.observer] db in
                try SQLiteWriteRows.run(db, observer: observer) { rows -> [String] in
                    var names: [String] = []
                    names.append(try await WriteRules.createItem(rows, id: nil, draft: Sample.keyboard, origin: Sample.erin).name)
                    do {
                        _ = try await rows.savepoint {
                            _ = try await WriteRules.createItem(rows, id: nil, draft: Sample.mouse, origin: Sample.erin)
                            throw Boom()
                        }
                    } catch is Boom {}
                    let draft = Draft(name: "Lamp", color: nil, status: .inStock(quantity: 1))
                    names.append(try await WriteRules.createItem(rows, id: nil, draft: draft, origin: Sample.erin).name)
                    do {
                        _ = try await rows.savepoint {
                            _ = try await WriteRules.createItem(rows, id: nil, draft: Sample.mouse, origin: Sample.erin)
                            throw Boom()
                        }
                    } catch is Boom {}
                    return names
                }
            }
            #expect(names == [Sample.keyboard.name, "Lamp"])
            #expect(database.hub.head == head + 2)
            try await Self.expectHubEqualsLog(database, after: head)
        }
    }
}
