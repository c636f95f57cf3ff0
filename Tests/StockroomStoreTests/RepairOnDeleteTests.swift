import Foundation
import GRDB
import StockroomCore
import StockroomStorage
import Testing

/// What only SQLite's tables show of the repair on delete. The repair itself (paths, alerts, edits,
/// the order of a user's devices, the log) is in StorageContractTests/RepairContractTests, on
/// every backend.
@Suite("Deleting an item repairs every navigation pointing at it, in the same transaction")
struct RepairOnDeleteTests {
    @Test("a confirmDelete that repairs another device leaves no client_item_refs row of the item")
    func confirmDeleteLeavesNoReferences() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let keyboard = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            _ = try await database.runCommand(.push(route: .item(id: keyboard.id)), clientID: "otto-tablet", origin: Sample.otto("otto-tablet"))
            _ = try await database.runCommand(.push(route: .item(id: keyboard.id)), clientID: "erin-phone", origin: Sample.erin("erin-phone"))
            _ = try await database.runCommand(.openDeleteAlert(itemID: keyboard.id), clientID: "erin-phone", origin: Sample.erin("erin-phone"))
            #expect(try await probe.count("client_item_refs") == 2)

            _ = try await database.runCommand(.confirmDelete, clientID: "erin-phone", origin: Sample.erin("erin-phone", key: "confirm-1"))
            #expect(try await probe.count("client_item_refs") == 0)
        }
    }

    /// `client_item_refs` is what a delete finds the devices to repair by; the store rewrites a
    /// device's rows only when they change, so each step checks them against the state: the items
    /// whose delete would change it (`repairableItemIDs`; not an edit's item, which stays open).
    @Test("after each command, client_item_refs holds exactly the items whose delete would change the device's state")
    func referencesFollowEveryCommand() async throws {
        try await withTemporaryDatabase { database in
            let probe = Probe(database)
            let keyboard = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let mouse = try await database.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin).value
            func expectReferences(after command: Command, origin: Origin = Sample.erin("phone"), _ expected: [Item]) async throws {
                let outcome = try await database.runCommand(command, clientID: "phone", origin: origin).value
                let names = Set(expected.map(\.id.description))
                #expect(Set(outcome.navigation.state.repairableItemIDs.map(\.description)) == names)
                let rows = try await probe.rows("SELECT item_id FROM client_item_refs WHERE client_id = 'phone'")
                #expect(Set(rows.map { $0["item_id"] as String? ?? "" }) == names)
            }
            try await expectReferences(after: .push(route: .item(id: keyboard.id)), [keyboard])
            try await expectReferences(after: .selectTab(tab: .settings), [keyboard])
            try await expectReferences(after: .selectTab(tab: .inventory), [keyboard])
            try await expectReferences(after: .openEdit(itemID: mouse.id), [keyboard])
            try await expectReferences(after: .updateDraft(draft: Sample.bluetooth), [keyboard])
            try await expectReferences(after: .save(), [keyboard])
            try await expectReferences(after: .pop, [])
            try await expectReferences(after: .push(route: .item(id: mouse.id)), [mouse])
            try await expectReferences(after: .openDeleteAlert(itemID: keyboard.id), [mouse, keyboard])
            try await expectReferences(after: .cancel, [mouse])
            // Another user's delete repairs the device in its own write: the rows follow.
            let otto = Sample.otto("otto-tablet")
            _ = try await database.runCommand(.openDeleteAlert(itemID: mouse.id), clientID: "otto-tablet", origin: otto)
            _ = try await database.runCommand(.confirmDelete, clientID: "otto-tablet", origin: otto)
            #expect(try await database.navigation(clientID: "phone", user: "erin").state.repairableItemIDs == [])
            #expect(try await probe.rows("SELECT item_id FROM client_item_refs WHERE client_id = 'phone'").isEmpty)
            try await expectReferences(after: .push(route: .item(id: keyboard.id)), [keyboard])
            // The same items named in another order, and an item named twice: the rows stay one per item.
            let cable = try await database.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin).value
            try await expectReferences(after: .push(route: .item(id: cable.id)), [keyboard, cable])
            try await expectReferences(after: .openEdit(itemID: keyboard.id), [keyboard, cable])
            let reordered = NavigationState(path: [.item(id: cable.id), .item(id: keyboard.id), .item(id: cable.id)])
            let replaced = try await database.replaceNavigation(clientID: "phone", state: reordered, precondition: nil, origin: Sample.erin("phone"))
            #expect(replaced.state.repairableItemIDs == [cable.id, keyboard.id])
            let rows = try await probe.rows("SELECT item_id FROM client_item_refs WHERE client_id = 'phone' ORDER BY item_id")
            #expect(rows.map { $0["item_id"] as String? ?? "" } == [keyboard.id, cable.id].map(\.description).sorted())
            try await expectReferences(after: .pop, [keyboard, cable])
            try await expectReferences(after: .pop, [cable])
        }
    }
}
