import Foundation
import StockroomCore
import StockroomStorage
import TestSupport
import Testing

extension StorageContractTests {
    // MARK: Navigation commands, atomic with their changes

    /// The episode's edit: the draft changes nothing until save, which writes the item and closes
    /// the edit in one transaction (two entries, consecutive seqs); cancel throws a draft away.
    @Test(arguments: StorageBackend.all)
    func anEditChangesTheItemOnlyWhenSaved(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Self.erin, idempotency: nil).value
            let opened = try await storage.runCommand(.openEdit(itemID: item.id), clientID: "erins-phone", origin: Self.erin, idempotency: nil).value
            #expect(opened.navigation.state.destination == .edit(itemID: item.id, baseVersion: 1, draft: Self.keyboard))
            let typed = Draft(name: "Bluetooth Keyboard", color: nil, status: .inStock(quantity: 1000))
            _ = try await storage.runCommand(.updateDraft(draft: typed), clientID: "erins-phone", origin: Self.erin, idempotency: nil)
            #expect(try await storage.item(item.id) == item, "a draft changes nothing")
            // Another device restores the navigation, draft included.
            #expect(try await storage.navigation(clientID: "erins-phone", user: "erin").state.destination?.draft == typed)

            let saved = try await storage.runCommand(.save(), clientID: "erins-phone", origin: Self.erin, idempotency: nil).value
            let current = try #require(try await storage.item(item.id))
            #expect(current.name == "Bluetooth Keyboard" && current.version == 2)
            #expect(saved.item == current && saved.navigation.state.destination == nil)
            let log = try await storage.readChanges(after: saved.seq - 2, filter: Self.everything, limit: 10).changes
            #expect(log.map(\.entity) == [.item, .navigation] && log.map(\.seq) == [saved.seq - 1, saved.seq])

            _ = try await storage.runCommand(.openEdit(itemID: item.id), clientID: "erins-phone", origin: Self.erin, idempotency: nil)
            _ = try await storage.runCommand(.updateDraft(draft: Self.mouse), clientID: "erins-phone", origin: Self.erin, idempotency: nil)
            let cancelled = try await storage.runCommand(.cancel, clientID: "erins-phone", origin: Self.erin, idempotency: nil).value
            #expect(cancelled.navigation.state.destination == nil)
            #expect(try await storage.item(item.id) == current)
            #expect(try await storage.navigations(user: "erin").map(\.clientID) == ["erins-phone"])
        }
    }

    /// A user's devices are listed by the user's own latest change, newest first; a repair caused
    /// by someone else's delete changes a device's state but not its place in that order.
    @Test(arguments: StorageBackend.all)
    func devicesAreListedByTheOwnersLatestChange(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let phone = Origin(user: "erin", clientID: "phone")
            let tablet = Origin(user: "erin", clientID: "tablet")
            let item = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Self.erin, idempotency: nil).value
            _ = try await storage.runCommand(.push(route: .item(id: item.id)), clientID: "phone", origin: phone, idempotency: nil)
            _ = try await storage.runCommand(.openDeleteAlert(itemID: item.id), clientID: "tablet", origin: tablet, idempotency: nil)
            #expect(try await storage.navigations(user: "erin").map(\.clientID) == ["tablet", "phone"])
            _ = try await storage.runCommand(.selectTab(tab: .settings), clientID: "phone", origin: phone, idempotency: nil)
            #expect(try await storage.navigations(user: "erin").map(\.clientID) == ["phone", "tablet"])

            // Someone else deletes the item: the tablet's alert is closed, the phone's path popped,
            // and the order stays.
            let admin = Origin(user: "admin")
            _ = try await storage.deleteItem(item.id, precondition: .any, origin: admin, idempotency: nil)
            let listed = try await storage.navigations(user: "erin")
            #expect(listed.map(\.clientID) == ["phone", "tablet"])
            #expect(listed.allSatisfy { $0.state.destination == nil && $0.state.path.isEmpty })

            _ = try await storage.runCommand(.selectTab(tab: .settings), clientID: "tablet", origin: tablet, idempotency: nil)
            #expect(try await storage.navigations(user: "erin").map(\.clientID) == ["tablet", "phone"])
        }
    }

    /// A save over a version changed since the draft began is refused with the current item, and
    /// nothing is written; of two devices saving at once, exactly one wins.
    @Test(arguments: StorageBackend.all)
    func ofTwoRacingSavesExactlyOneWins(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Self.keyboard, origin: Self.erin, idempotency: nil).value
            let devices: [ClientID] = ["phone", "tablet"]
            for device in devices {
                let origin = Origin(user: "erin", clientID: device)
                _ = try await storage.runCommand(.openEdit(itemID: item.id), clientID: device, origin: origin, idempotency: nil)
                _ = try await storage.runCommand(
                    .updateDraft(draft: Draft(name: "From \(device)", color: nil, status: .inStock(quantity: 1))), clientID: device,
                    origin: origin, idempotency: nil)
            }
            let head = try await storage.resolve(.now)
            let results = await withTaskGroup(of: Result<CommandOutcome, StoreError>.self) { group in
                for device in devices {
                    group.addTask {
                        do {
                            return .success(
                                try await storage.runCommand(.save(), clientID: device, origin: Origin(user: "erin", clientID: device), idempotency: nil).value)
                        } catch let error as StoreError {
                            return .failure(error)
                        } catch {
                            return .failure(.unavailable("\(error)"))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let wins = results.compactMap { try? $0.get() }
            #expect(wins.count == 1)
            let current = try #require(try await storage.item(item.id))
            #expect(current.version == 2 && current.name == wins.first?.item?.name)
            for case .failure(let error) in results {
                #expect(Failure(error) == .domain(.conflict(current: current)))
            }
            // The winner's two entries, nothing from the loser.
            #expect(try await storage.resolve(.now) == head + 2)
            // The loser's draft is kept: no typed text is lost.
            let drafts = try await storage.navigations(user: "erin").compactMap(\.state.destination?.draft?.name)
            #expect(drafts.count == 1 && drafts[0].hasPrefix("From "))
        }
    }

    // MARK: Idempotent requests

    /// A decided request is stored with its answer (bytes the store does not read) in the write's
    /// transaction: a retry gets those bytes and applies nothing; the key with another request is
    /// refused; an outcome not decided (render gives nil) is not stored.
    @Test(arguments: StorageBackend.all)
    func aRetryReplaysTheStoredAnswerAndAppliesNothing(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let key = IdempotencyKey(user: "erin", scope: .items, key: "k1")
            let answer: @Sendable (Result<Item, any Error>) -> StoredResponse? = { result in
                guard case .success(let item) = result else { return nil }
                return StoredResponse(bytes: Array("created \(item.id)".utf8))
            }
            let request = IdempotentRequest(key: key, fingerprint: "POST keyboard", render: answer)
            let origin = Origin(user: "erin", clientID: nil, idempotencyKey: "k1")
            let first = try await storage.createItem(id: nil, draft: Self.keyboard, origin: origin, idempotency: request)
            let item = try first.value
            let head = try await storage.resolve(.now)

            let retry = try await storage.createItem(id: nil, draft: Self.keyboard, origin: origin, idempotency: request)
            guard case .replayed(let stored) = retry else {
                Issue.record("the retry ran again")
                return
            }
            #expect(stored == StoredResponse(bytes: Array("created \(item.id)".utf8)))
            #expect(try await storage.resolve(.now) == head)
            #expect(try await storage.listItems(after: nil, limit: 10, query: nil, status: nil).items == [item])

            let other = IdempotentRequest(key: key, fingerprint: "POST mouse", render: answer)
            #expect(await failure { try await storage.createItem(id: nil, draft: Self.mouse, origin: origin, idempotency: other) } == .idempotencyKeyReused)
            // Records younger than the contract's minimum stay, whatever is asked.
            #expect(try await storage.purgeIdempotencyRecords(olderThan: .zero) == 0)
            #expect(try await storage.createItem(id: nil, draft: Self.keyboard, origin: origin, idempotency: request).isReplay)
        }
    }

}
