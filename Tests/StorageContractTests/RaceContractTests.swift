import Foundation
import StockroomCore
import StockroomStorage
import StockroomWire
import TestSupport
import Testing

/// Concurrent writers on every backend. (Moved from StockroomStoreTests/ConcurrentSaveTests.)
@Suite("Storage contract: concurrent writers")
struct RaceContractTests {
    /// 20 commands of one device at once, its first among them: every one applies, none lost,
    /// whichever path it takes (a command that reads items reads the device's row without holding
    /// it and writes only at the version read; a first write queues behind the other first writes).
    @Test(arguments: StorageBackend.all)
    func twentyCommandsOfOneNewDeviceAtOnceAllApply(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            var items: [Item] = []
            for index in 0..<10 {
                items.append(try await storage.createItem(id: nil, draft: Draft(name: "Item \(index)", color: nil, status: .inStock(quantity: 1)), origin: Sample.erin).value)
            }
            let head = try await storage.resolve(.now)
            let pushed = items
            let answers = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        // Pushes read items (the row read, not held); tab changes hold the row.
                        let command: Command = index.isMultiple(of: 2)
                            ? .push(route: .item(id: pushed[index / 2].id)) : .selectTab(tab: index % 4 == 1 ? .settings : .inventory)
                        return (try? await storage.runCommand(command, clientID: "fresh", origin: Sample.erin("fresh"))) != nil
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0 }, "every command applies")
            let navigation = try await storage.navigation(clientID: "fresh", user: "erin")
            #expect(navigation.state.path.count == 10, "no push lost")
            let entries = try await storage.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.navigation]), limit: 100).changes
            let versions = try entries.map { try JSONCoding.decoder().decode(Navigation.self, from: Data(try #require($0.valueJSON).utf8)).version }
            // selectTab of the tab already shown writes nothing: at most 20 versions, each once, in order.
            #expect(versions == Array(1...versions.count) && navigation.version == versions.count)
        }
    }

    /// 20 devices saving edits of the same item at the same base version: one wins, 19 get conflict,
    /// their drafts kept; the log holds the winner's two entries and nothing else.
    @Test(arguments: StorageBackend.all)
    func oneOfTwentySavesWins(backend: StorageBackend) async throws {
        try await withStorage(backend) { storage in
            let item = try await storage.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let clients = (0..<20).map { ClientID("device-\($0)")! }
            var typed: [ClientID: Navigation] = [:]
            for (index, client) in clients.enumerated() {
                _ = try await storage.runCommand(.openEdit(itemID: item.id), clientID: client, origin: Sample.erin(client))
                let draft = Draft(name: "Keyboard \(index)", color: nil, status: .inStock(quantity: index))
                typed[client] = try await storage.runCommand(.updateDraft(draft: draft), clientID: client, origin: Sample.erin(client)).value.navigation
            }
            let head = try await storage.resolve(.now)

            let results = await withTaskGroup(of: (ClientID, Result<CommandOutcome, Failure>).self) { group in
                for client in clients {
                    group.addTask {
                        do {
                            return (client, .success(try await storage.runCommand(.save(), clientID: client, origin: Sample.erin(client)).value))
                        } catch {
                            return (client, .failure(Failure(error)))
                        }
                    }
                }
                var results: [ClientID: Result<CommandOutcome, Failure>] = [:]
                for await (client, result) in group { results[client] = result }
                return results
            }

            let winners = results.compactMap { client, result in (try? result.get()).map { (client, $0) } }
            try #require(winners.count == 1, "\(results)")
            let (winner, outcome) = winners[0]
            let saved = try #require(outcome.item)
            let index = try #require(clients.firstIndex(of: winner))
            #expect(
                saved
                    == Item(
                        id: item.id, name: "Keyboard \(index)", color: nil, status: .inStock(quantity: index), version: 2,
                        createdAt: item.createdAt, updatedAt: saved.updatedAt))
            #expect(try await storage.item(item.id) == saved)

            for client in clients where client != winner {
                guard case .failure(let failure) = results[client] else {
                    Issue.record("\(client) has no failure")
                    continue
                }
                #expect(failure == .domain(.conflict(current: saved)), "\(client)")
                #expect(try await storage.navigation(clientID: client, user: "erin") == typed[client])
            }
            #expect(outcome.navigation.state == .root)
            #expect(
                try await loggedChanges(storage, after: head) == [
                    .itemUpsert(head + 1, saved, Sample.erin(winner)),
                    .navigationUpsert(head + 2, outcome.navigation, owner: "erin", Sample.erin(winner)),
                ])
        }
    }
}
