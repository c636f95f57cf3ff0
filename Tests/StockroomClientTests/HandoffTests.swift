import Foundation
import Observation
import StockroomClient
import Testing

@Suite("SyncedStore against a live server: handoff, optimism, rollback, observation", .timeLimit(.minutes(10)))
@MainActor
struct HandoffTests {
    /// The handoff of the `stockroom-handoff` example, over each transport (its `--transport`).
    @Test(arguments: testedTransports)
    func twoDevicesHandOffADraftAndTheSaveReachesBoth(over transport: FeedTransport) async throws {
        try await withServer { server in
            let client = try server.client()
            let keyboard = try await client.createItem(.named("Keyboard", quantity: 100))
            let phone = try SyncedStore(
                client: client, clientID: "phone", queuePath: server.clientFile("phone.sqlite"), options: testStoreOptions(transport))
            let laptop = try SyncedStore(
                client: try server.client(token: server.secondEditor), clientID: "laptop", queuePath: server.clientFile("laptop.sqlite"),
                options: testStoreOptions(transport))
            phone.start()
            laptop.start()
            defer {
                phone.stop()
                laptop.stop()
            }
            try await waitUntil(phone, "the phone's snapshot") { $0.itemsByID[keyboard.id] != nil }

            // Given the phone opens an edit and types into the draft,
            try phone.send(.openEdit(itemID: keyboard.id))
            for character in " (US)" { try phone.editDraft { $0.name.append(character) } }
            #expect(phone.draft?.name == "Keyboard (US)", "the phone shows its typing before any answer")

            // the laptop sees the phone's navigation and draft live.
            try await waitUntil(laptop, "the phone's draft on the laptop") {
                $0.device("phone")?.state.destination?.draft?.name == "Keyboard (US)"
            }
            let phoneState = try #require(laptop.device("phone")).state

            // When the laptop continues from the phone, it shows the same edit at once, and saves.
            try laptop.continue(from: "phone")
            #expect(laptop.navigation.state == phoneState)
            let saved = try await laptop.perform(.save())

            // Then both show the new item, and the laptop's editor closed on both screens.
            let expected = Item(
                id: keyboard.id, name: "Keyboard (US)", color: nil, status: .inStock(quantity: 100), version: 2,
                createdAt: keyboard.createdAt, updatedAt: try #require(saved.item).updatedAt)
            #expect(saved.item == expected)
            #expect(laptop.navigation.state.destination == nil)
            try await waitUntil(phone, "the saved item and the laptop's closed editor on the phone") {
                $0.itemsByID[keyboard.id] == expected && $0.device("laptop")?.state.destination == nil
                    && $0.device("laptop")?.version == saved.navigation.version
            }
            try await waitUntil(laptop, "the laptop settled") { $0.pendingWrites.isEmpty && $0.itemsByID[keyboard.id] == expected }
            #expect(phone.items == [expected])
            #expect(laptop.items == [expected])
            // The phone's own draft stays open (the contract keeps typed drafts); its save would now be a conflict.
            #expect(phone.navigation.state.destination == .edit(itemID: keyboard.id, baseVersion: 1, draft: .named("Keyboard (US)", quantity: 100)))
            #expect(phone.failedWrites.isEmpty && laptop.failedWrites.isEmpty)
        }
    }

    @Test func anOptimisticSaveTheServerRefusesRollsBackWithItsError() async throws {
        try await withServer { server in
            let item = try await server.client().createItem(.named("Lamp"))
            // A viewer may drive its navigation but not save an item: the save is refused with 403.
            let kiosk = try SyncedStore(
                client: try server.client(token: server.viewer), clientID: "kiosk", queue: .inMemory(), options: testStoreOptions)
            kiosk.start()
            defer { kiosk.stop() }
            try await waitUntil(kiosk, "the snapshot") { $0.itemsByID[item.id] != nil }
            try await kiosk.perform(.openEdit(itemID: item.id))
            try kiosk.editDraft { $0.name = "Desk Lamp" }
            let before = kiosk.navigation.state

            try kiosk.send(.save())
            // Optimistic: the editor closed and the item renamed, before any answer.
            #expect(kiosk.navigation.state.destination == nil)
            #expect(kiosk.itemsByID[item.id]?.name == "Desk Lamp")
            #expect(kiosk.itemsByID[item.id]?.version == 2)

            try await waitUntil(kiosk, "the refusal") { !$0.failedWrites.isEmpty }
            #expect(kiosk.navigation.state == before, "the editor is open again with the typed draft")
            #expect(kiosk.itemsByID[item.id] == item, "the item is the server's again")
            #expect(kiosk.failedWrites.map(\.error.code) == [.forbidden])
            #expect(kiosk.failedWrites.first?.command == .save())
            #expect(kiosk.pendingWrites.isEmpty)

            // A command the server refuses as invalid (422: a name longer than an item may have) leaves the
            // queue too, and does not block the next one.
            let tooLong = String(repeating: "x", count: 300)
            try kiosk.send(.updateDraft(draft: .named(tooLong)))
            let cancelled = try await kiosk.perform(.cancel)
            #expect(cancelled.navigation.state.destination == nil)
            #expect(kiosk.failedWrites.map(\.error.code) == [.forbidden, .validationFailed])
            #expect(kiosk.failedWrites.last?.error.field == "name")
            #expect(kiosk.navigation.state.destination == nil)
        }
    }

    @Test func aStaleDraftSaveSurfacesTheTypedConflictWithTheCurrentItem() async throws {
        try await withServer { server in
            let client = try server.client()
            let item = try await client.createItem(.named("Chair"))
            let phone = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions)
            phone.start()
            defer { phone.stop() }
            try await waitUntil(phone, "the snapshot") { $0.itemsByID[item.id] != nil }
            try await phone.perform(.openEdit(itemID: item.id))
            try phone.editDraft { $0.name = "Office Chair" }

            // Someone else writes the item meanwhile.
            let current = try await server.client(token: server.secondEditor).updateItem(item, with: .named("Stool"))
            try await waitUntil(phone, "the other write") { $0.itemsByID[item.id] == current }

            let error = try await #require(throws: StockroomError.self) { try await phone.perform(.save()) }
            #expect(error.status == 409)
            #expect(error.code == .conflict)
            #expect(error.currentItem == current)
            #expect(error.currentVersion == 2)
            #expect(phone.failedWrites.map(\.error) == [error])
            #expect(
                phone.navigation.state.destination == .edit(itemID: item.id, baseVersion: 1, draft: .named("Office Chair")),
                "the typed draft stays open")

            // The plain client says the same.
            let plain = try await #require(throws: StockroomError.self) { try await client.send(.save(), from: "phone") }
            #expect(plain.code == .conflict && plain.currentItem == current)
        }
    }

    /// Two devices edit one item; the second save asks for the alert: `SyncedStore` shows the
    /// conflict at once (the same transition the server runs), the server's answer agrees, the
    /// other device sees the alert through the feed, and a button's command resolves it.
    @Test func aStaleSaveWithTheAlertBecomesTheConflictAlertOnEveryDevice() async throws {
        try await withServer { server in
            let client = try server.client()
            let item = try await client.createItem(.named("Chair"))
            let phone = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions)
            let laptop = try SyncedStore(client: client, clientID: "laptop", queue: .inMemory(), options: testStoreOptions)
            phone.start()
            laptop.start()
            defer {
                phone.stop()
                laptop.stop()
            }
            try await waitUntil(phone, "the snapshot") { $0.itemsByID[item.id] != nil }
            try await waitUntil(laptop, "the snapshot") { $0.itemsByID[item.id] != nil }
            try await phone.perform(.openEdit(itemID: item.id))
            try phone.editDraft { $0.name = "Office Chair" }
            try await laptop.perform(.openEdit(itemID: item.id))
            try laptop.editDraft { $0.name = "Stool" }
            let saved = try await laptop.perform(.save(onConflict: .alert))
            let current = try #require(saved.item)
            try await waitUntil(phone, "the laptop's save") { $0.itemsByID[item.id] == current }

            let answer = try await phone.perform(.save(onConflict: .alert))
            #expect(answer.item == nil)
            let conflict = Destination.conflict(itemID: item.id, baseVersion: 1, draft: .named("Office Chair"), current: current)
            #expect(answer.navigation.state.destination == conflict)
            #expect(phone.navigation.state.destination == conflict)
            #expect(phone.failedWrites.isEmpty, "an alert, not an error")
            try await waitUntil(laptop, "the phone's alert on the laptop") { $0.device("phone")?.state.destination == conflict }

            // The alert's "keep my edit" button writes the draft over the laptop's version.
            let keep = try #require(conflict.alert?.buttons.first { $0.command == .resolveConflict(keep: .mine) })
            #expect(keep.label.text == "Keep my edit")
            let kept = try await phone.perform(keep.command)
            #expect(kept.item?.name == "Office Chair" && kept.item?.version == 3)
            #expect(phone.navigation.state.destination == nil)
        }
    }

    /// A store's own stream marks its device online (on the server's next presence tick); another
    /// device's store sees it through the feed's presence changes, and sees it go when the store stops.
    @Test func aRunningStoreIsOnlineToTheOtherDevicesAndOfflineWhenStopped() async throws {
        try await withServer { server in
            let client = try server.client()
            let laptop = try SyncedStore(client: client, clientID: "laptop", queue: .inMemory(), options: testStoreOptions)
            laptop.start()
            defer { laptop.stop() }
            let phone = try SyncedStore(client: client, clientID: "phone", queue: .inMemory(), options: testStoreOptions)
            phone.start()
            try await phone.perform(.selectTab(tab: .settings))
            try await waitUntil(laptop, "the phone online") { $0.presence["phone"]?.online == true }
            let seen = try #require(laptop.presence["phone"]?.lastSeenAt)
            phone.stop()
            try await waitUntil(laptop, "the phone offline") { $0.presence["phone"]?.online == false }
            #expect((laptop.presence["phone"]?.lastSeenAt ?? .distantPast) >= seen)
            // A plain read says the same.
            #expect(try await client.devicePresence()["phone"]?.online == false)
        }
    }

    @Test func observationFiresWhenAChangeArrivesFromAnotherDevice() async throws {
        try await withServer { server in
            let phone = try SyncedStore(client: try server.client(), clientID: "phone", queue: .inMemory(), options: testStoreOptions)
            phone.start()
            defer { phone.stop() }
            try await waitUntil(phone, "online") { $0.connection == .online }

            let (fired, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let before = withObservationTracking {
                (phone.otherDevices, phone.items)
            } onChange: {
                continuation.yield()
            }
            #expect(before.0.isEmpty && before.1.isEmpty)

            // Another device (a plain client of the same user) opens an add sheet.
            let result = try await server.client(token: server.secondEditor).send(.openAdd, from: "tablet")
            var iterator = fired.makeAsyncIterator()
            await iterator.next()
            try await waitUntil(phone, "the tablet's navigation") { $0.device("tablet") != nil }
            #expect(phone.otherDevices == [result.navigation])
        }
    }
}
