import Foundation
import GRDB
import StockroomCore
import Testing

import StockroomStorage
@testable import StockroomStore

private struct Abort: Error {}

@Suite("The change log")
struct ChangeLogTests {
    @Test("every write appends exactly its entries; seqs are 1, 2, 3… with no gap after failed writes")
    func seqsHaveNoGapsAcrossFailedWrites() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let phone = Sample.erin("phone", key: "k-open")
            let rest = Sample.erin("rest", key: "k-rest")

            let keyboard = try await database.createItem(id: nil, draft: Sample.keyboard, origin: rest).value  // 1
            _ = await failure { try await database.createItem(id: keyboard.id, draft: Sample.mouse, origin: rest) }
            _ = await failure { try await database.createItem(id: nil, draft: Sample.blankName, origin: rest) }
            let mouse = try await database.createItem(id: nil, draft: Sample.mouse, origin: rest).value  // 2
            _ = await failure { try await database.updateItem(keyboard.id, draft: Sample.mouse, precondition: .oneOf([9]), origin: rest) }
            let opened = try await database.runCommand(.openEdit(itemID: keyboard.id), clientID: "phone", origin: phone).value  // 3
            _ = await failure { try await database.runCommand(.pop, clientID: "phone", origin: phone) }
            _ = await failure { try await database.runCommand(.push(route: .item(id: .random())), clientID: "phone", origin: phone) }
            _ = await failure { try await database.runCommand(.cancel, clientID: "phone", origin: Sample.otto("phone")) }
            let keyboard2 = try await database.updateItem(keyboard.id, draft: Sample.bluetooth, precondition: nil, origin: rest).value  // 4
            _ = await failure { try await database.runCommand(.save(), clientID: "phone", origin: phone) }  // conflict
            try await database.deleteItem(mouse.id, precondition: nil, origin: rest)  // 5
            _ = await failure { try await database.deleteItem(mouse.id, precondition: nil, origin: rest) }
            // A transaction that appended entries and then failed leaves no gap either.
            _ = await failure {
                try await database.writer.write { db in
                    _ = try database.applyCreateItem(db, id: nil, draft: Sample.keyboard, origin: rest)
                    throw Abort()
                }
            }
            let cancelled = try await database.runCommand(.cancel, clientID: "phone", origin: phone).value  // 6

            #expect(try await probe.changeSeqs() == [1, 2, 3, 4, 5, 6])
            #expect(cancelled.seq == 6)
            #expect(
                try await probe.changes() == [
                    .itemUpsert(1, keyboard, rest),
                    .itemUpsert(2, mouse, rest),
                    .navigationUpsert(3, opened.navigation, owner: "erin", phone),
                    .itemUpsert(4, keyboard2, rest),
                    .itemDelete(5, mouse.id, rest),
                    .navigationUpsert(6, cancelled.navigation, owner: "erin", phone),
                ])
        }
    }

    @Test("entries are appended inside the caller's transaction: a rollback takes them back with the write")
    func entriesShareTheWriteTransaction() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let before = try await probe.snapshot()

            let outcome = await failure {
                try await database.writer.write { db -> Void in
                    _ = try database.applyUpdateItem(db, id: item.id, draft: Sample.mouse, precondition: nil, origin: Sample.erin)
                    _ = try database.applyCreateItem(db, id: nil, draft: Sample.bluetooth, origin: Sample.erin)
                    _ = try database.applyCommand(db, .push(route: .item(id: item.id)), clientID: "phone", origin: Sample.erin("phone"), limits: StoreLimits())
                    // Inside the transaction the three entries are there…
                    guard try Int.fetchOne(db, sql: "SELECT count(*) FROM changes") == 4 else { throw StoreError.unavailable("entries missing") }
                    throw Abort()
                }
            }
            #expect(outcome == .other(String(describing: Abort())))
            // …and after the rollback they are gone with the writes.
            #expect(try await probe.snapshot() == before)
        }
    }

    @Test("an item upsert stores the Item JSON with every field (null colour included) and its time in at")
    func itemUpsertColumns() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let origin = Origin(user: "erin", clientID: "tablet", idempotencyKey: "key-42")
            let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: origin).value

            #expect(try await probe.changes() == [.itemUpsert(1, item, origin)])
            let raw = try #require(try await probe.rawChange(seq: 1))
            #expect(raw.at == Timestamp.milliseconds(item.updatedAt))
            let json = try #require(raw.value)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["id", "name", "color", "status", "version", "createdAt", "updatedAt"])
            #expect(object["color"] is NSNull)
            #expect(object["id"] as? String == item.id.description)
            #expect(object["createdAt"] as? String == Timestamp.format(item.createdAt))
            let rows = try await probe.rows("SELECT owner FROM changes WHERE seq = 1")
            #expect(rows == [PlainRow(values: ["owner": DatabaseValue.null])])
        }
    }

    @Test("a delete entry has op delete, the item id, and a NULL value")
    func deleteColumns() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let origin = Origin(user: "otto", clientID: nil, idempotencyKey: "del")
            try await database.deleteItem(item.id, precondition: nil, origin: origin)

            #expect(try await probe.changes(after: 1) == [.itemDelete(2, item.id, origin)])
            let raw = try #require(try await probe.rawChange(seq: 2))
            #expect(raw.value == nil)
            let deletedAt = try await probe.itemRows().first?["deleted_at"] as Int64?
            #expect(raw.at == deletedAt)
        }
    }

    @Test("a navigation entry carries the client id, its owner, the Navigation JSON and the command's origin")
    func navigationColumns() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let origin = Sample.otto("otto-phone", key: "nav-1")
            let outcome = try await database.runCommand(.push(route: .item(id: item.id)), clientID: "otto-phone", origin: origin).value

            #expect(
                outcome.navigation
                    == Navigation(
                        clientID: "otto-phone", state: NavigationState(tab: .inventory, path: [.item(id: item.id)], destination: nil),
                        version: 1, updatedAt: outcome.navigation.updatedAt))
            #expect(outcome.item == nil)
            #expect(outcome.seq == 2)
            #expect(try await probe.changes(after: 1) == [.navigationUpsert(2, outcome.navigation, owner: "otto", origin)])
            let raw = try #require(try await probe.rawChange(seq: 2))
            #expect(raw.at == Timestamp.milliseconds(try #require(outcome.navigation.updatedAt)))
            let json = try #require(raw.value)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["clientID", "tab", "path", "destination", "checkpoints", "url", "version", "updatedAt"])
            #expect(object["destination"] is NSNull)
        }
    }

    @Test("replacing a navigation appends one entry; an identical replace, a missing item, a stale If-Match or another user's client append none")
    func replaceNavigation() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let item = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let state = NavigationState(
                tab: .settings, path: [.item(id: item.id)], destination: .edit(itemID: item.id, baseVersion: 1, draft: Sample.bluetooth))
            let origin = Sample.erin("phone")

            let written = try await database.replaceNavigation(clientID: "phone", state: state, precondition: nil, origin: origin)
            #expect(written == Navigation(clientID: "phone", state: state, version: 1, updatedAt: written.updatedAt))
            #expect(try await database.navigation(clientID: "phone", user: "erin") == written)
            #expect(try await probe.changes(after: 1) == [.navigationUpsert(2, written, owner: "erin", origin)])

            let before = try await probe.snapshot()
            #expect(try await database.replaceNavigation(clientID: "phone", state: state, precondition: .oneOf([1]), origin: origin) == written)
            let missing = ItemID.random()
            #expect(
                await failure {
                    try await database.replaceNavigation(
                        clientID: "phone", state: state.with { $0.path.append(.item(id: missing)) }, precondition: nil, origin: origin)
                } == .domain(.validationFailed(field: "path", message: "no item \(missing)")))
            #expect(
                await failure {
                    try await database.replaceNavigation(
                        clientID: "phone", state: state.with { $0.destination = .deleteAlert(itemID: missing, alert: .deleteItem(name: nil)) }, precondition: nil, origin: origin)
                } == .domain(.validationFailed(field: "destination", message: "no item \(missing)")))
            #expect(
                await failure {
                    try await database.replaceNavigation(clientID: "phone", state: .root, precondition: .oneOf([7]), origin: origin)
                } == .preconditionFailed(currentVersion: 1))
            #expect(
                await failure {
                    try await database.replaceNavigation(clientID: "phone", state: .root, precondition: nil, origin: Sample.otto("phone"))
                } == .notFound)
            #expect(try await probe.snapshot() == before)

            let root = try await database.replaceNavigation(clientID: "phone", state: .root, precondition: .oneOf([1]), origin: origin)
            #expect(root == Navigation(clientID: "phone", state: .root, version: 2, updatedAt: root.updatedAt))
            #expect(try await probe.changes(after: 2) == [.navigationUpsert(3, root, owner: "erin", origin)])
        }
    }
}
