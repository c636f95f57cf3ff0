import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import Testing

/// The navigation additions on every backend: conflicts as navigation, checkpoints and deep links
/// applied in one transaction, alerts rendered by the store.
@Suite("Storage contract: alerts, conflicts, checkpoints, deep links")
struct NavigationContractTests {
    static let keyboard = Draft(name: "Keyboard", color: nil, status: .inStock(quantity: 3))

    static func run(_ storage: any Storage, _ command: Command, on device: ClientID) async throws -> CommandOutcome {
        try await storage.runCommand(command, clientID: device, origin: Origin(user: "erin", clientID: device), idempotency: nil).value
    }

    /// A command's outcome carries the JSON its change entries hold, which the server splices into
    /// its answer: the bytes of the entries, and the bytes the navigation and item write themselves.
    @Test(arguments: StorageBackend.all)
    func anOutcomeCarriesTheJSONOfItsEntries(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Origin(user: "erin"), idempotency: nil).value
            _ = try await Self.run(storage, .openEdit(itemID: item.id), on: "phone")
            _ = try await Self.run(storage, .updateDraft(draft: Draft(name: "Renamed", color: nil, status: .inStock(quantity: 9))), on: "phone")
            let head = try await storage.resolve(.now)
            let saved = try await Self.run(storage, .save(), on: "phone")
            let written = try #require(saved.item)
            #expect(saved.itemJSON?.jsonBytes == written.jsonBytes)
            #expect(saved.navigationJSON?.jsonBytes == saved.navigation.jsonBytes)
            let entries = try await storage.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item, .navigation]), limit: 10).changes
            #expect(entries.map(\.entity) == [.item, .navigation])
            #expect(entries.map { Array(($0.valueJSON ?? "").utf8) } == [written.jsonBytes, saved.navigation.jsonBytes])
            // A command that writes no item carries only its navigation's; one that changes nothing, neither.
            let selected = try await Self.run(storage, .selectTab(tab: .settings), on: "phone")
            #expect(selected.itemJSON == nil && selected.navigationJSON?.jsonBytes == selected.navigation.jsonBytes)
            let again = try await Self.run(storage, .selectTab(tab: .settings), on: "phone")
            #expect(again.navigationJSON == nil && again.navigation == selected.navigation)
        }
    }

    /// Two devices save the same item at once asking for the alert: exactly one wins; the other
    /// gets the conflict alert with the item as it is now and its own draft kept, in one
    /// transaction. A third device that restores the loser sees the same alert, and "keep mine"
    /// from there writes the loser's draft over the winner's version.
    @Test(arguments: StorageBackend.all)
    func ofTwoRacingAlertSavesOneWinsAndTheOtherGetsTheConflictAlert(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(
                id: nil, draft: Self.keyboard, origin: Origin(user: "erin"), idempotency: nil
            ).value
            let devices: [ClientID] = ["phone", "tablet"]
            for device in devices {
                _ = try await Self.run(storage, .push(route: .item(id: item.id)), on: device)
                _ = try await Self.run(storage, .openEdit(itemID: item.id), on: device)
                _ = try await Self.run(
                    storage, .updateDraft(draft: Draft(name: "From \(device)", color: nil, status: .inStock(quantity: 1))), on: device)
            }
            let head = try await storage.resolve(.now)
            let outcomes = try await withThrowingTaskGroup(of: (ClientID, CommandOutcome).self) { group in
                for device in devices {
                    group.addTask { (device, try await Self.run(storage, .save(onConflict: .alert), on: device)) }
                }
                return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            let winners = outcomes.filter { $0.value.item != nil }
            #expect(winners.count == 1)
            let (winner, won) = try #require(winners.first)
            let loser = devices.first { $0 != winner }!
            let current = try #require(try await storage.item(item.id))
            #expect(current == won.item && current.version == 2)
            let lost = try #require(outcomes[loser])
            #expect(lost.item == nil)
            let loserDraft = Draft(name: "From \(loser)", color: nil, status: .inStock(quantity: 1))
            #expect(
                lost.navigation.state.destination
                    == .conflict(itemID: item.id, baseVersion: 1, draft: loserDraft, current: current))
            #expect(lost.navigation.state.destination?.alert?.message?.args == [current.name])
            // The winner's item and navigation entries, and the loser's navigation entry: nothing else.
            #expect(try await storage.resolve(.now) == head + 3)

            // Restored on a third device, the alert is there, draft and all.
            let restored = try await Self.run(storage, .restore(fromClientID: loser), on: "laptop")
            #expect(restored.navigation.state == lost.navigation.state)
            // The alert refuses what is not one of its buttons.
            await #expect(throws: StoreError.self) { try await Self.run(storage, .save(), on: "laptop") }
            let kept = try await Self.run(storage, .resolveConflict(keep: .mine), on: "laptop")
            #expect(kept.navigation.state.destination == nil)
            let final = try #require(try await storage.item(item.id))
            #expect(final.version == 3 && final.name == "From \(loser)" && kept.item == final)

            // The loser's own device still shows the alert, now about a version it has not seen:
            // "keep mine" there is a new conflict, not a silent overwrite.
            let again = try await Self.run(storage, .resolveConflict(keep: .mine), on: loser)
            #expect(again.item == nil)
            #expect(again.navigation.state.destination == .conflict(itemID: item.id, baseVersion: 2, draft: loserDraft, current: final))
            let review = try await Self.run(storage, .resolveConflict(keep: .review), on: loser)
            #expect(review.navigation.state.destination == .edit(itemID: item.id, baseVersion: 3, draft: loserDraft))
        }
    }

    /// A delete while a conflict is open turns it into the deleted-item alert (no review); "keep
    /// mine" then inserts the draft as a new item.
    @Test(arguments: StorageBackend.all)
    func aConflictOverADeletedItemSavesTheDraftAsANewItem(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Origin(user: "erin"), idempotency: nil).value
            _ = try await Self.run(storage, .openEdit(itemID: item.id), on: "phone")
            let typed = Draft(name: "Typed", color: nil, status: .outOfStock(isOnBackOrder: false))
            _ = try await Self.run(storage, .updateDraft(draft: typed), on: "phone")
            _ = try await storage.updateItem(
                item.id, draft: Draft(name: "Renamed", color: nil, status: .inStock(quantity: 3)), precondition: .any,
                origin: Origin(user: "otto"), idempotency: nil)
            let conflict = try await Self.run(storage, .save(onConflict: .alert), on: "phone")
            guard case .conflict(_, _, _, .some, let alert) = conflict.navigation.state.destination else {
                Issue.record("no conflict: \(String(describing: conflict.navigation.state.destination))")
                return
            }
            #expect(alert.commands.contains(.resolveConflict(keep: .review)))

            _ = try await storage.deleteItem(item.id, precondition: .any, origin: Origin(user: "otto"), idempotency: nil)
            let repaired = try await storage.navigation(clientID: "phone", user: "erin")
            #expect(repaired.state.destination == .conflict(itemID: item.id, baseVersion: 1, draft: typed, current: nil))
            #expect(repaired.state.destination?.alert?.commands.contains(.resolveConflict(keep: .review)) == false)

            let kept = try await Self.run(storage, .resolveConflict(keep: .mine), on: "phone")
            let inserted = try #require(kept.item)
            #expect(inserted.id != item.id && inserted.name == "Typed" && inserted.version == 1)
            #expect(kept.navigation.state.destination == nil)
        }
    }

    /// A deep link opens as one transaction from the item as it is now; the state's canonical URL
    /// opens the same screen on a fresh device. A checkpoint set along the way is returned to with a
    /// value, closing the edit and leaving the item alone.
    @Test(arguments: StorageBackend.all)
    func deepLinksAndCheckpointsApplyInOneTransaction(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let a = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Origin(user: "erin"), idempotency: nil).value
            let b = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Origin(user: "erin"), idempotency: nil).value
            _ = try await Self.run(storage, .push(route: .item(id: a.id)), on: "phone")
            _ = try await Self.run(storage, .setCheckpoint(name: "detail"), on: "phone")
            let head = try await storage.resolve(.now)
            let opened = try await Self.run(storage, .openURL(url: "stockroom://inventory/items/\(a.id)/items/\(b.id)/edit"), on: "phone")
            #expect(try await storage.resolve(.now) == head + 1)
            #expect(opened.navigation.state.path == [.item(id: a.id), .item(id: b.id)])
            #expect(opened.navigation.state.destination == .edit(itemID: b.id, baseVersion: 1, draft: Self.keyboard))
            #expect(opened.navigation.state.checkpoints.isEmpty, "a link replaces the state, checkpoints included")
            let url = opened.navigation.state.url
            #expect(url == "stockroom://inventory/items/\(a.id)/items/\(b.id)/edit")
            let elsewhere = try await Self.run(storage, .openURL(url: url), on: "laptop")
            #expect(elsewhere.navigation.state == opened.navigation.state)

            _ = try await Self.run(storage, .popToRoot, on: "phone")
            _ = try await Self.run(storage, .push(route: .item(id: a.id)), on: "phone")
            _ = try await Self.run(storage, .setCheckpoint(name: "detail"), on: "phone")
            _ = try await Self.run(storage, .push(route: .item(id: b.id)), on: "phone")
            _ = try await Self.run(storage, .openEdit(itemID: b.id), on: "phone")
            _ = try await Self.run(storage, .updateDraft(draft: Draft(name: "Never saved", color: nil, status: .inStock(quantity: 1))), on: "phone")
            let back = try await Self.run(storage, .returnToCheckpoint(name: "detail", value: .object(["picked": .string("b")])), on: "phone")
            #expect(back.navigation.state.path == [.item(id: a.id)] && back.navigation.state.destination == nil)
            #expect(back.navigation.state.checkpoints == ["detail": Checkpoint(depth: 1, value: .object(["picked": .string("b")]))])
            #expect(try await storage.item(b.id) == b, "the draft was discarded, the item untouched")
            #expect(try await storage.navigation(clientID: "phone", user: "erin") == back.navigation)
            _ = try await Self.run(storage, .pop, on: "phone")
            #expect(try await storage.navigation(clientID: "phone", user: "erin").state.checkpoints.isEmpty, "popping above removes it")
        }
    }

    /// A replacement stores the alert the store renders, whatever the client sent.
    @Test(arguments: StorageBackend.all)
    func aReplacementStoresTheAlertTheStoreRenders(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Origin(user: "erin"), idempotency: nil).value
            let forged = AlertState(
                title: TextState(key: "x", text: "Forged"), message: nil,
                buttons: [ButtonState(label: TextState(key: "x", text: "Go"), role: nil, command: .popToRoot)])
            let navigation = try await storage.replaceNavigation(
                clientID: "phone", state: NavigationState(destination: .deleteAlert(itemID: item.id, alert: forged)), precondition: nil,
                origin: Origin(user: "erin", clientID: "phone"))
            #expect(navigation.state.destination == .deleteAlert(for: item))
        }
    }
}
