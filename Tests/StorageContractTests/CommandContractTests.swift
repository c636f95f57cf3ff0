import Foundation
import StockroomCore
import StockroomStorage
import TestSupport
import Testing

/// Navigation commands on every backend, each one transaction with its change entries; a refused
/// or empty command writes nothing. (Moved from StockroomStoreTests/CommandStoreTests.)
@Suite("Storage contract: navigation commands run as one transaction each")
struct CommandContractTests {
    /// The episode: edit, type, cancel leaves the item; edit, type, save writes version 2 and closes the sheet.
    @Test(arguments: StorageBackend.all)
    func episode(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let erin = Sample.erin("phone")
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            func state(_ destination: Destination?) -> NavigationState {
                NavigationState(tab: .inventory, path: [], destination: destination)
            }
            func navigation(_ outcome: CommandOutcome, _ destination: Destination?, version: Int) -> Navigation {
                Navigation(clientID: "phone", state: state(destination), version: version, updatedAt: outcome.navigation.updatedAt)
            }

            // Given an edit sheet opened on the keyboard
            let opened = try await storage.runCommand(.openEdit(itemID: keyboard.id), clientID: "phone", origin: erin).value
            let editing = Destination.edit(itemID: keyboard.id, baseVersion: 1, draft: keyboard.draft)
            #expect(opened == CommandOutcome(navigation: navigation(opened, editing, version: 1), item: nil, seq: 2))

            // When the user types, the draft changes and the item does not
            let typed = try await storage.runCommand(.updateDraft(draft: Sample.bluetooth), clientID: "phone", origin: erin).value
            let typedEdit = Destination.edit(itemID: keyboard.id, baseVersion: 1, draft: Sample.bluetooth)
            #expect(typed == CommandOutcome(navigation: navigation(typed, typedEdit, version: 2), item: nil, seq: 3))
            #expect(try await storage.item(keyboard.id) == keyboard)

            // When they cancel, the draft is gone and the item is still untouched
            let cancelled = try await storage.runCommand(.cancel, clientID: "phone", origin: erin).value
            #expect(cancelled == CommandOutcome(navigation: navigation(cancelled, nil, version: 3), item: nil, seq: 4))
            #expect(try await storage.item(keyboard.id) == keyboard)

            // When they edit, type and save, the item is written at version 2 and the sheet closes
            let reopened = try await storage.runCommand(.openEdit(itemID: keyboard.id), clientID: "phone", origin: erin).value
            #expect(reopened.navigation == navigation(reopened, editing, version: 4))
            let retyped = try await storage.runCommand(.updateDraft(draft: Sample.bluetooth), clientID: "phone", origin: erin).value
            #expect(retyped.navigation == navigation(retyped, typedEdit, version: 5))
            let saved = try await storage.runCommand(.save(), clientID: "phone", origin: erin).value
            let written = try #require(saved.item)
            #expect(
                written
                    == Item(
                        id: keyboard.id, name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000), version: 2,
                        createdAt: keyboard.createdAt, updatedAt: written.updatedAt))
            #expect(saved == CommandOutcome(navigation: navigation(saved, nil, version: 6), item: written, seq: 8))
            #expect(try await storage.item(keyboard.id) == written)
            #expect(try await storage.navigation(clientID: "phone", user: "erin") == saved.navigation)

            #expect(
                try await loggedChanges(storage) == [
                    .itemUpsert(1, keyboard, Sample.erin),
                    .navigationUpsert(2, opened.navigation, owner: "erin", erin),
                    .navigationUpsert(3, typed.navigation, owner: "erin", erin),
                    .navigationUpsert(4, cancelled.navigation, owner: "erin", erin),
                    .navigationUpsert(5, reopened.navigation, owner: "erin", erin),
                    .navigationUpsert(6, retyped.navigation, owner: "erin", erin),
                    .itemUpsert(7, written, erin),
                    .navigationUpsert(8, saved.navigation, owner: "erin", erin),
                ])
        }
    }

    /// A save over a changed item fails with conflict(current:) and leaves no trace.
    @Test(arguments: StorageBackend.all)
    func failedSaveLeavesNoTrace(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let erin = Sample.erin("phone")
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            _ = try await storage.runCommand(.openEdit(itemID: keyboard.id), clientID: "phone", origin: erin)
            let typed = try await storage.runCommand(.updateDraft(draft: Sample.bluetooth), clientID: "phone", origin: erin).value
            let changedElsewhere = try await storage.updateItem(keyboard.id, draft: Sample.mouse, precondition: nil, origin: Sample.otto).value
            let before = try await observe(storage)

            #expect(
                await failure { try await storage.runCommand(.save(), clientID: "phone", origin: erin) }
                    == .domain(.conflict(current: changedElsewhere)))

            #expect(try await observe(storage) == before)
            #expect(try await storage.navigation(clientID: "phone", user: "erin") == typed.navigation)
            #expect(try await storage.item(keyboard.id) == changedElsewhere)
        }
    }

    /// A save of an invalid draft or a command that does not fit fails and leaves no trace, not even a
    /// device of the user.
    @Test(arguments: StorageBackend.all)
    func otherFailedCommandsLeaveNoTrace(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let erin = Sample.erin("phone")
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value

            var before = try await observe(storage)
            #expect(
                await failure { try await storage.runCommand(.save(), clientID: "phone", origin: erin) }
                    == .domain(.invalidTransition("save needs an open add, edit or duplicate")))
            #expect(
                await failure { try await storage.runCommand(.pop, clientID: "phone", origin: erin) }
                    == .domain(.invalidTransition("pop needs a non-empty path")))
            let missing = ItemID.random()
            #expect(
                await failure { try await storage.runCommand(.openEdit(itemID: missing), clientID: "phone", origin: erin) }
                    == .domain(.itemNotFound(missing)))
            #expect(try await observe(storage) == before)
            #expect(try await storage.navigations(user: "erin") == [])

            _ = try await storage.runCommand(.openEdit(itemID: keyboard.id), clientID: "phone", origin: erin)
            let typed = try await storage.runCommand(.updateDraft(draft: Sample.blankName), clientID: "phone", origin: erin).value
            before = try await observe(storage)
            #expect(await failure { try await storage.runCommand(.save(), clientID: "phone", origin: erin) } == .domain(Sample.blankNameError))
            #expect(try await observe(storage) == before)
            #expect(try await storage.navigation(clientID: "phone", user: "erin") == typed.navigation)
            #expect(try await storage.item(keyboard.id) == keyboard)
        }
    }

    /// Cancel with nothing open and popToRoot on an empty path create no version, no entry and no device.
    @Test(arguments: StorageBackend.all)
    func noOpCommands(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
            let before = try await observe(storage)

            for command in [Command.cancel, .popToRoot, .selectTab(tab: .inventory)] {
                let outcome = try await storage.runCommand(command, clientID: "fresh", origin: Sample.erin("fresh")).value
                #expect(outcome == CommandOutcome(navigation: .unwritten(clientID: "fresh"), item: nil, seq: 1), "\(command)")
            }
            #expect(try await observe(storage) == before)
            #expect(try await storage.navigations(user: "erin") == [])
            #expect(try await storage.navigation(clientID: "fresh", user: "erin") == .unwritten(clientID: "fresh"))

            // On a written device too: nothing new.
            let tab = try await storage.runCommand(.selectTab(tab: .settings), clientID: "phone", origin: Sample.erin("phone")).value
            let written = try await observe(storage)
            for command in [Command.cancel, .popToRoot, .selectTab(tab: .settings)] {
                let outcome = try await storage.runCommand(command, clientID: "phone", origin: Sample.erin("phone")).value
                #expect(outcome == CommandOutcome(navigation: tab.navigation, item: nil, seq: 2), "\(command)")
            }
            #expect(try await observe(storage) == written)
        }
    }

    /// Another user's device does not exist: commands and reads answer notFound and write nothing.
    @Test(arguments: StorageBackend.all)
    func anotherUsersClientIsNotFound(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let mine = try await storage.runCommand(.push(route: .item(id: keyboard.id)), clientID: "phone", origin: Sample.erin("phone")).value
            let before = try await observe(storage)

            for command in [Command.cancel, .popToRoot, .pop, .openAdd, .selectTab(tab: .settings), .restore(fromClientID: "phone")] {
                #expect(
                    await failure { try await storage.runCommand(command, clientID: "phone", origin: Sample.otto("phone")) } == .notFound,
                    "\(command)")
            }
            #expect(await failure { try await storage.navigation(clientID: "phone", user: "otto") } == .notFound)
            #expect(try await storage.navigations(user: "otto") == [])
            #expect(try await observe(storage) == before)
            #expect(try await storage.navigation(clientID: "phone", user: "erin") == mine.navigation)
        }
    }

    /// Restore copies the same user's device, drafts included, and refuses another user's with clientNotFound.
    @Test(arguments: StorageBackend.all)
    func restore(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            _ = try await storage.runCommand(.selectTab(tab: .settings), clientID: "phone", origin: Sample.erin("phone"))
            _ = try await storage.runCommand(.push(route: .item(id: keyboard.id)), clientID: "phone", origin: Sample.erin("phone"))
            _ = try await storage.runCommand(.openEdit(itemID: keyboard.id), clientID: "phone", origin: Sample.erin("phone"))
            let phone = try await storage.runCommand(.updateDraft(draft: Sample.bluetooth), clientID: "phone", origin: Sample.erin("phone")).value
            let expected = NavigationState(
                tab: .settings, path: [.item(id: keyboard.id)],
                destination: .edit(itemID: keyboard.id, baseVersion: 1, draft: Sample.bluetooth))
            #expect(phone.navigation.state == expected)

            // Otto cannot pick up Erin's phone, nor a device nobody wrote.
            let before = try await observe(storage)
            #expect(
                await failure { try await storage.runCommand(.restore(fromClientID: "phone"), clientID: "tablet", origin: Sample.otto("tablet")) }
                    == .domain(.clientNotFound("phone")))
            #expect(
                await failure { try await storage.runCommand(.restore(fromClientID: "nowhere"), clientID: "laptop", origin: Sample.erin("laptop")) }
                    == .domain(.clientNotFound("nowhere")))
            #expect(try await observe(storage) == before)

            // Erin continues on her laptop where the phone left off.
            let laptop = try await storage.runCommand(.restore(fromClientID: "phone"), clientID: "laptop", origin: Sample.erin("laptop")).value
            #expect(
                laptop
                    == CommandOutcome(
                        navigation: Navigation(clientID: "laptop", state: expected, version: 1, updatedAt: laptop.navigation.updatedAt),
                        item: nil, seq: phone.seq + 1))
            #expect(
                try await loggedChanges(storage, after: phone.seq)
                    == [.navigationUpsert(phone.seq + 1, laptop.navigation, owner: "erin", Sample.erin("laptop"))])
            #expect(try await storage.navigation(clientID: "phone", user: "erin") == phone.navigation)

            // …and saves from there.
            let saved = try await storage.runCommand(.save(), clientID: "laptop", origin: Sample.erin("laptop")).value
            #expect(saved.item?.name == "Bluetooth Keyboard")
            #expect(saved.item?.version == 2)
            #expect(saved.navigation.state == NavigationState(tab: .settings, path: [.item(id: keyboard.id)], destination: nil))
        }
    }

    /// Add and duplicate saves insert a new item; confirmDelete deletes and closes the alert.
    @Test(arguments: StorageBackend.all)
    func addDuplicateAndConfirmDelete(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let erin = Sample.erin("phone")
            let keyboard = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value

            let add = try await storage.runCommand(.openAdd, clientID: "phone", origin: erin).value
            #expect(add.navigation.state.destination == .add(draft: .blank))
            _ = try await storage.runCommand(.updateDraft(draft: Sample.mouse), clientID: "phone", origin: erin)
            let added = try await storage.runCommand(.save(), clientID: "phone", origin: erin).value
            let mouse = try #require(added.item)
            #expect(
                mouse
                    == Item(
                        id: mouse.id, name: "Mouse", color: Sample.mouse.color, status: Sample.mouse.status, version: 1, createdAt: mouse.createdAt,
                        updatedAt: mouse.createdAt))
            #expect(try await storage.item(mouse.id) == mouse)
            #expect(added.navigation.state == .root)

            let duplicate = try await storage.runCommand(.openDuplicate(itemID: keyboard.id), clientID: "phone", origin: erin).value
            #expect(duplicate.navigation.state.destination == .duplicate(itemID: keyboard.id, draft: keyboard.draft))
            let duplicated = try await storage.runCommand(.save(), clientID: "phone", origin: erin).value
            let copy = try #require(duplicated.item)
            #expect(copy.id != keyboard.id)
            #expect(copy.draft == keyboard.draft)
            #expect(try await storage.item(keyboard.id) == keyboard)

            _ = try await storage.runCommand(.push(route: .item(id: keyboard.id)), clientID: "phone", origin: erin)
            let alert = try await storage.runCommand(.openDeleteAlert(itemID: keyboard.id), clientID: "phone", origin: erin).value
            let deleted = try await storage.runCommand(.confirmDelete, clientID: "phone", origin: erin).value
            #expect(
                deleted
                    == CommandOutcome(
                        navigation: Navigation(
                            clientID: "phone", state: .root, version: alert.navigation.version + 1, updatedAt: deleted.navigation.updatedAt),
                        item: nil, seq: alert.seq + 2))
            #expect(try await storage.item(keyboard.id) == nil)
            #expect(
                try await loggedChanges(storage, after: alert.seq) == [
                    .itemDelete(alert.seq + 1, keyboard.id, erin),
                    .navigationUpsert(alert.seq + 2, deleted.navigation, owner: "erin", erin),
                ])
        }
    }
}
