import Foundation
import StockroomCore
import StockroomStorage
import TestSupport
import Testing

/// Deleting an item repairs every navigation pointing at it, on every backend, in the delete's
/// transaction. (Moved from StockroomStoreTests/RepairOnDeleteTests, which keeps the check of
/// SQLite's reference table.)
@Suite("Storage contract: deleting an item repairs every navigation pointing at it")
struct RepairContractTests {
    /// Path entries go, a delete alert closes, an edit stays open and its save then answers itemDeleted.
    @Test(arguments: StorageBackend.all)
    func repairAcrossClientsAndUsers(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let mouse = try await storage.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin).value

            // Given Otto's tablet with a delete alert for the keyboard, then his watch on settings,
            _ = try await storage.runCommand(.push(route: .item(id: mouse.id)), clientID: "otto-tablet", origin: Sample.otto("otto-tablet"))
            let tablet = try await storage.runCommand(
                .openDeleteAlert(itemID: keyboard.id), clientID: "otto-tablet", origin: Sample.otto("otto-tablet")
            ).value
            let watch = try await storage.runCommand(.selectTab(tab: .settings), clientID: "otto-watch", origin: Sample.otto("otto-watch")).value
            // and Erin's phone drilled into keyboard then mouse, then her laptop editing the keyboard
            _ = try await storage.runCommand(.push(route: .item(id: keyboard.id)), clientID: "erin-phone", origin: Sample.erin("erin-phone"))
            let phone = try await storage.runCommand(.push(route: .item(id: mouse.id)), clientID: "erin-phone", origin: Sample.erin("erin-phone"))
                .value
            _ = try await storage.runCommand(.openEdit(itemID: keyboard.id), clientID: "erin-laptop", origin: Sample.erin("erin-laptop"))
            let laptop = try await storage.runCommand(
                .updateDraft(draft: Sample.bluetooth), clientID: "erin-laptop", origin: Sample.erin("erin-laptop")
            ).value
            #expect(try await storage.navigations(user: "otto") == [watch.navigation, tablet.navigation])
            #expect(try await storage.navigations(user: "erin") == [laptop.navigation, phone.navigation])
            let head = try await storage.resolve(.now)

            // When Erin deletes the keyboard through the items API
            let origin = Origin(user: "erin", clientID: nil, idempotencyKey: "delete-keyboard")
            try await storage.deleteItem(keyboard.id, precondition: .oneOf([1]), origin: origin)

            // Then the phone loses its keyboard entry, the tablet's alert closes, the laptop's edit stays
            let phoneAfter = try await storage.navigation(clientID: "erin-phone", user: "erin")
            let tabletAfter = try await storage.navigation(clientID: "otto-tablet", user: "otto")
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
            #expect(try await storage.navigation(clientID: "erin-laptop", user: "erin") == laptop.navigation)
            #expect(try await storage.navigation(clientID: "otto-watch", user: "otto") == watch.navigation)

            // and the log holds exactly the delete and one entry per repaired navigation, all with the delete's origin
            let appended = try await loggedChanges(storage, after: head)
            #expect(appended.map(\.seq) == [head + 1, head + 2, head + 3])
            #expect(appended.first == .itemDelete(head + 1, keyboard.id, origin))
            #expect(
                Set(appended.map(\.unsequenced)) == [
                    LoggedChange.itemDelete(0, keyboard.id, origin),
                    .navigationUpsert(0, phoneAfter, owner: "erin", origin),
                    .navigationUpsert(0, tabletAfter, owner: "otto", origin),
                ])

            // and the order of a user's devices moves only for the user's own changes:
            // Otto's tablet was repaired by Erin's delete and does not move up; Erin's phone, repaired by her own, does.
            #expect(try await storage.navigations(user: "otto") == [watch.navigation, tabletAfter])
            #expect(try await storage.navigations(user: "erin") == [phoneAfter, laptop.navigation])

            // When the laptop saves its kept draft, it hears that the item was deleted, and nothing changes
            let before = try await observe(storage)
            #expect(
                await failure { try await storage.runCommand(.save(), clientID: "erin-laptop", origin: Sample.erin("erin-laptop")) }
                    == .domain(.itemDeleted(keyboard.id)))
            #expect(try await observe(storage) == before)
            #expect(try await storage.navigation(clientID: "erin-laptop", user: "erin") == laptop.navigation)

            // and it can still cancel.
            let cancelled = try await storage.runCommand(.cancel, clientID: "erin-laptop", origin: Sample.erin("erin-laptop")).value
            #expect(cancelled.navigation.state == .root)
        }
    }

    /// A repair by another user's delete does not move the device up the owner's list.
    @Test(arguments: StorageBackend.all)
    func foreignRepairDoesNotReorder(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            // Otto's older device points at the keyboard; his newer one does not.
            _ = try await storage.runCommand(.push(route: .item(id: keyboard.id)), clientID: "old", origin: Sample.otto("old"))
            let newer = try await storage.runCommand(.selectTab(tab: .settings), clientID: "new", origin: Sample.otto("new")).value

            try await storage.deleteItem(keyboard.id, precondition: nil, origin: Sample.erin)
            let repaired = try await storage.navigation(clientID: "old", user: "otto")
            #expect(repaired.version == 2)
            #expect(repaired.state == .root)
            #expect(try await storage.navigations(user: "otto") == [newer.navigation, repaired])

            // Otto's own change to the old device does move it up.
            let touched = try await storage.runCommand(.selectTab(tab: .settings), clientID: "old", origin: Sample.otto("old")).value
            #expect(try await storage.navigations(user: "otto") == [touched.navigation, newer.navigation])
        }
    }

    /// confirmDelete repairs the other devices and writes the deleting device once, with the command's origin.
    @Test(arguments: StorageBackend.all)
    func confirmDeleteRepairsOthers(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let otherPath = try await storage.runCommand(
                .push(route: .item(id: keyboard.id)), clientID: "otto-tablet", origin: Sample.otto("otto-tablet")
            ).value
            _ = try await storage.runCommand(.push(route: .item(id: keyboard.id)), clientID: "erin-phone", origin: Sample.erin("erin-phone"))
            let alert = try await storage.runCommand(
                .openDeleteAlert(itemID: keyboard.id), clientID: "erin-phone", origin: Sample.erin("erin-phone")
            ).value

            let command = Sample.erin("erin-phone", key: "confirm-1")
            let deleted = try await storage.runCommand(.confirmDelete, clientID: "erin-phone", origin: command).value
            #expect(
                deleted.navigation
                    == Navigation(clientID: "erin-phone", state: .root, version: alert.navigation.version + 1, updatedAt: deleted.navigation.updatedAt))
            #expect(deleted.seq == alert.seq + 3)
            let tablet = try await storage.navigation(clientID: "otto-tablet", user: "otto")
            #expect(
                tablet == Navigation(clientID: "otto-tablet", state: .root, version: otherPath.navigation.version + 1, updatedAt: tablet.updatedAt))

            let appended = try await loggedChanges(storage, after: alert.seq)
            #expect(appended.map(\.seq) == [alert.seq + 1, alert.seq + 2, alert.seq + 3])
            #expect(
                Set(appended.map(\.unsequenced)) == [
                    LoggedChange.itemDelete(0, keyboard.id, command),
                    .navigationUpsert(0, tablet, owner: "otto", command),
                    .navigationUpsert(0, deleted.navigation, owner: "erin", command),
                ])
        }
    }

    /// A duplicate of a deleted item stays open and its save inserts as usual.
    @Test(arguments: StorageBackend.all)
    func duplicateOfDeletedItemStillSaves(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let duplicate = try await storage.runCommand(.openDuplicate(itemID: keyboard.id), clientID: "phone", origin: Sample.erin("phone")).value
            try await storage.deleteItem(keyboard.id, precondition: nil, origin: Sample.otto)
            #expect(try await storage.navigation(clientID: "phone", user: "erin") == duplicate.navigation)

            let saved = try await storage.runCommand(.save(), clientID: "phone", origin: Sample.erin("phone")).value
            let copy = try #require(saved.item)
            #expect(copy.draft == keyboard.draft)
            #expect(copy.id != keyboard.id)
            #expect(saved.navigation.state == .root)
        }
    }
}
