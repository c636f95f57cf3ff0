import Foundation
import GRDB
import StockroomCore
import Testing

import StockroomStorage
@testable import StockroomStore

@Suite("Deleting an item repairs every navigation pointing at it, in the same transaction")
struct RepairOnDeleteTests {
    @Test("path entries go, a delete alert closes, an edit stays open and its save then answers itemDeleted")
    func repairAcrossClientsAndUsers() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let keyboard = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let mouse = try await database.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin).value

            // Given Otto's tablet with a delete alert for the keyboard, then his watch on settings,
            _ = try await database.runCommand(.push(route: .item(id: mouse.id)), clientID: "otto-tablet", origin: Sample.otto("otto-tablet"))
            let tablet = try await database.runCommand(
                .openDeleteAlert(itemID: keyboard.id), clientID: "otto-tablet", origin: Sample.otto("otto-tablet")).value
            let watch = try await database.runCommand(.selectTab(tab: .settings), clientID: "otto-watch", origin: Sample.otto("otto-watch")).value
            // and Erin's phone drilled into keyboard then mouse, then her laptop editing the keyboard
            _ = try await database.runCommand(.push(route: .item(id: keyboard.id)), clientID: "erin-phone", origin: Sample.erin("erin-phone"))
            let phone = try await database.runCommand(.push(route: .item(id: mouse.id)), clientID: "erin-phone", origin: Sample.erin("erin-phone")).value
            _ = try await database.runCommand(.openEdit(itemID: keyboard.id), clientID: "erin-laptop", origin: Sample.erin("erin-laptop"))
            let laptop = try await database.runCommand(.updateDraft(draft: Sample.bluetooth), clientID: "erin-laptop", origin: Sample.erin("erin-laptop")).value
            #expect(try await database.navigations(user: "otto") == [watch.navigation, tablet.navigation])
            #expect(try await database.navigations(user: "erin") == [laptop.navigation, phone.navigation])
            let head = try await probe.head()

            // When Erin deletes the keyboard through the items API
            let origin = Origin(user: "erin", clientID: nil, idempotencyKey: "delete-keyboard")
            try await database.deleteItem(keyboard.id, precondition: .oneOf([1]), origin: origin)

            // Then the phone loses its keyboard entry, the tablet's alert closes, the laptop's edit stays
            let phoneAfter = try await database.navigation(clientID: "erin-phone", user: "erin")
            let tabletAfter = try await database.navigation(clientID: "otto-tablet", user: "otto")
            #expect(
                phoneAfter
                    == Navigation(
                        clientID: "erin-phone", state: NavigationState(tab: .inventory, path: [.item(id: mouse.id)], destination: nil),
                        version: phone.navigation.version + 1, updatedAt: phoneAfter.updatedAt))
            #expect(
                tabletAfter
                    == Navigation(
                        clientID: "otto-tablet", state: NavigationState(tab: .inventory, path: [.item(id: mouse.id)], destination: nil),
                        version: tablet.navigation.version + 1, updatedAt: tabletAfter.updatedAt))
            #expect(try await database.navigation(clientID: "erin-laptop", user: "erin") == laptop.navigation)
            #expect(try await database.navigation(clientID: "otto-watch", user: "otto") == watch.navigation)

            // and the log holds exactly the delete and one entry per repaired navigation, all with the delete's origin
            let appended = try await probe.changes(after: head)
            #expect(appended.map(\.seq) == [head + 1, head + 2, head + 3])
            #expect(appended.first == .itemDelete(head + 1, keyboard.id, origin))
            #expect(
                Set(appended.map(\.unsequenced)) == [
                    LoggedChange.itemDelete(0, keyboard.id, origin),
                    .navigationUpsert(0, phoneAfter, owner: "erin", origin),
                    .navigationUpsert(0, tabletAfter, owner: "otto", origin),
                ])

            // and the order of a user's clients moves only for the user's own changes:
            // Otto's tablet was repaired by Erin's delete and does not move up; Erin's phone, repaired by her own, does.
            #expect(try await database.navigations(user: "otto") == [watch.navigation, tabletAfter])
            #expect(try await database.navigations(user: "erin") == [phoneAfter, laptop.navigation])

            // When the laptop saves its kept draft, it hears that the item was deleted, and nothing changes
            let before = try await probe.snapshot()
            #expect(
                await failure { try await database.runCommand(.save(), clientID: "erin-laptop", origin: Sample.erin("erin-laptop")) }
                    == .domain(.itemDeleted(keyboard.id)))
            #expect(try await probe.snapshot() == before)
            #expect(try await database.navigation(clientID: "erin-laptop", user: "erin") == laptop.navigation)

            // and it can still cancel.
            let cancelled = try await database.runCommand(.cancel, clientID: "erin-laptop", origin: Sample.erin("erin-laptop")).value
            #expect(cancelled.navigation.state == .root)
        }
    }

    @Test("a repair by another user's delete does not move the client up the owner's list")
    func foreignRepairDoesNotReorder() async throws {
        try await withTemporaryDatabase { database in
            let keyboard = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            // Otto's older client points at the keyboard; his newer one does not.
            _ = try await database.runCommand(.push(route: .item(id: keyboard.id)), clientID: "old", origin: Sample.otto("old"))
            let newer = try await database.runCommand(.selectTab(tab: .settings), clientID: "new", origin: Sample.otto("new")).value

            try await database.deleteItem(keyboard.id, precondition: nil, origin: Sample.erin)
            let repaired = try await database.navigation(clientID: "old", user: "otto")
            #expect(repaired.version == 2)
            #expect(repaired.state == .root)
            #expect(try await database.navigations(user: "otto") == [newer.navigation, repaired])

            // Otto's own change to the old client does move it up.
            let touched = try await database.runCommand(.selectTab(tab: .settings), clientID: "old", origin: Sample.otto("old")).value
            #expect(try await database.navigations(user: "otto") == [touched.navigation, newer.navigation])
        }
    }

    @Test("confirmDelete repairs the other clients and writes the deleting client once, with the command's origin")
    func confirmDeleteRepairsOthers() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let keyboard = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let otherPath = try await database.runCommand(.push(route: .item(id: keyboard.id)), clientID: "otto-tablet", origin: Sample.otto("otto-tablet")).value
            _ = try await database.runCommand(.push(route: .item(id: keyboard.id)), clientID: "erin-phone", origin: Sample.erin("erin-phone"))
            let alert = try await database.runCommand(.openDeleteAlert(itemID: keyboard.id), clientID: "erin-phone", origin: Sample.erin("erin-phone")).value

            let command = Sample.erin("erin-phone", key: "confirm-1")
            let deleted = try await database.runCommand(.confirmDelete, clientID: "erin-phone", origin: command).value
            #expect(deleted.navigation == Navigation(clientID: "erin-phone", state: .root, version: alert.navigation.version + 1, updatedAt: deleted.navigation.updatedAt))
            #expect(deleted.seq == alert.seq + 3)
            let tablet = try await database.navigation(clientID: "otto-tablet", user: "otto")
            #expect(tablet == Navigation(clientID: "otto-tablet", state: .root, version: otherPath.navigation.version + 1, updatedAt: tablet.updatedAt))

            let appended = try await probe.changes(after: alert.seq)
            #expect(appended.map(\.seq) == [alert.seq + 1, alert.seq + 2, alert.seq + 3])
            #expect(
                Set(appended.map(\.unsequenced)) == [
                    LoggedChange.itemDelete(0, keyboard.id, command),
                    .navigationUpsert(0, tablet, owner: "otto", command),
                    .navigationUpsert(0, deleted.navigation, owner: "erin", command),
                ])
            #expect(try await probe.count("client_item_refs") == 0)
        }
    }

    @Test("a duplicate of a deleted item stays open and its save inserts as usual")
    func duplicateOfDeletedItemStillSaves() async throws {
        try await withTemporaryDatabase { database in
            let keyboard = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let duplicate = try await database.runCommand(.openDuplicate(itemID: keyboard.id), clientID: "phone", origin: Sample.erin("phone")).value
            try await database.deleteItem(keyboard.id, precondition: nil, origin: Sample.otto)
            #expect(try await database.navigation(clientID: "phone", user: "erin") == duplicate.navigation)

            let saved = try await database.runCommand(.save(), clientID: "phone", origin: Sample.erin("phone")).value
            let copy = try #require(saved.item)
            #expect(copy.draft == keyboard.draft)
            #expect(copy.id != keyboard.id)
            #expect(saved.navigation.state == .root)
        }
    }
}
