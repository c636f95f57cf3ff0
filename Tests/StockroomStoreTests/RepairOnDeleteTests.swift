import Foundation
import GRDB
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
}
