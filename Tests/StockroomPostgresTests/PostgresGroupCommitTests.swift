import Foundation
import PostgresNIO
import StockroomCore
@testable import StockroomPostgres
import StockroomStorage
import StockroomWire
import Synchronization
import TestSupport
import Testing

/// A daemon's writes go through its group commit (`PostgresCommitter`): many writes in one
/// transaction, each in its own savepoint, their entries numbered by one head step. These tests
/// hold the committer with a write that waits, queue the others behind it, and let them go as one
/// batch.
@Suite("PostgreSQL: group commit", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct PostgresGroupCommitTests {
    static let erin = Origin(user: "erin")

    static func draft(_ n: Int) -> Draft { Draft(name: "Item \(n)", color: nil, status: .inStock(quantity: n)) }

    /// Holds `store`'s committer until `release` opens: one write waits in its batch, so that every
    /// write submitted meanwhile queues for the next one.
    static func hold(_ store: PostgresStore, until release: Gate) async throws -> Task<Void, any Error> {
        let entered = Gate()
        let holder = Task {
            _ = try await store.write { _ in
                entered.open()
                await release.wait()
            }
        }
        await entered.wait()
        return holder
    }

    /// Runs `writes` queued together behind a held committer: their answers by index, and the
    /// committer's statistics before and after.
    static func queuedTogether<Answer: Sendable>(
        _ store: PostgresStore, _ writes: [@Sendable () async throws -> Answer]
    ) async throws -> (answers: [Int: Answer], before: PostgresCommitter.Statistics, after: PostgresCommitter.Statistics) {
        let release = Gate()
        let holder = try await hold(store, until: release)
        let before = store.committer.statistics
        let answers = try await withThrowingTaskGroup(of: (Int, Answer).self) { group in
            for (index, write) in writes.enumerated() { group.addTask { (index, try await write()) } }
            try await eventually("every write is queued") { store.committer.pendingCount >= writes.count }
            release.open()
            return try await group.reduce(into: [Int: Answer]()) { $0[$1.0] = $1.1 }
        }
        try await holder.value
        let after = store.committer.statistics
        return (answers, before, after)
    }

    /// `queuedTogether`, expecting the writes to form one batch.
    static func inOneBatch<Answer: Sendable>(
        _ store: PostgresStore, _ writes: [@Sendable () async throws -> Answer]
    ) async throws -> (answers: [Int: Answer], before: PostgresCommitter.Statistics, after: PostgresCommitter.Statistics) {
        let run = try await queuedTogether(store, writes)
        #expect(run.after.batches == run.before.batches + 1)
        return run
    }

    /// Every batch, a lone write's as one of several writes', tells the other daemons of its head
    /// when it commits: another daemon learns of each with no poll (the poll is ten minutes away).
    @Test(.timeLimit(.minutes(10)))
    func everyBatchTellsTheOtherDaemonsOfItsHead() async throws {
        try await withDaemons(2, pollInterval: .seconds(600)) { stores, _ in
            let (a, b) = (stores[0], stores[1])
            try await eventually("both daemons listen") { a.isListening && b.isListening }
            _ = try await a.createItem(id: nil, draft: Self.draft(0), origin: Self.erin, idempotency: nil)
            try await eventually("b learns of the lone write", timeout: .seconds(30)) { b.hub.head == 1 }
            let writes: [@Sendable () async throws -> Item] = (1...5).map { n in
                { try await a.createItem(id: nil, draft: Self.draft(n), origin: Self.erin, idempotency: nil).value }
            }
            _ = try await Self.inOneBatch(a, writes)
            try await eventually("b learns of the batch of five", timeout: .seconds(30)) { b.hub.head == 6 }
        }
    }

    /// Writes refused in different ways among many in one batch: each refused one gets its own
    /// error and writes nothing; the others commit with one head step, their entries contiguous.
    @Test(.timeLimit(.minutes(10)))
    func oneRefusedAmongManyIsAnsweredAloneAndTheOthersCommit() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            let existing = try await store.createItem(id: nil, draft: Self.draft(0), origin: Self.erin, idempotency: nil).value
            let head = try await store.resolve(.now)
            enum Kind: Sendable { case create(ItemID), existing, invalid, failingStatement, update }
            let kinds: [Kind] = (0..<12).map { _ in .create(ItemID.random()) } + [.existing, .invalid, .failingStatement, .update]
            // The held write's batch, then one batch for all the others.
            let writes: [@Sendable () async throws -> Result<Item, Failure>] = kinds.enumerated().map { index, kind in
                {
                    let result = await Result<Item, any Error> {
                        switch kind {
                        case .create(let id): try await store.createItem(id: id, draft: Self.draft(index), origin: Self.erin, idempotency: nil).value
                        case .existing: try await store.createItem(id: existing.id, draft: Self.draft(1), origin: Self.erin, idempotency: nil).value
                        case .invalid:
                            try await store.createItem(
                                id: nil, draft: Draft(name: "", color: nil, status: .inStock(quantity: 1)), origin: Self.erin, idempotency: nil
                            ).value
                        // A statement that fails (22012) aborts the transaction but for the write's savepoint.
                        case .failingStatement:
                            try await store.write { write in
                                try await write.query("SELECT 1 / 0")
                                return existing
                            }
                        case .update:
                            try await store.updateItem(existing.id, draft: Self.draft(99), precondition: .oneOf([1]), origin: Self.erin, idempotency: nil)
                                .value
                        }
                    }
                    return result.mapError(Failure.init)
                }
            }
            let results = try await Self.inOneBatch(store, writes).answers
            #expect(store.committer.statistics.largestBatch >= kinds.count)
            var created: [ItemID] = []
            for (index, kind) in kinds.enumerated() {
                let result = try #require(results[index])
                switch kind {
                case .create(let id):
                    #expect(try result.get().id == id)
                    created.append(id)
                case .existing: #expect(result.failure == Failure(StoreError.alreadyExists(existing.id)))
                case .invalid: #expect(result.failure?.description.contains("name must not be empty") == true)
                case .failingStatement:
                    // The statement's own error (PSQLError), answered to this write alone.
                    guard case .other(let text)? = result.failure else {
                        Issue.record("the failing statement's write got \(result)")
                        continue
                    }
                    #expect(text.contains("PSQLError"))
                case .update: #expect(try result.get().version == 2)
                }
            }
            // One entry per applied write (12 creates and the update), numbered after the head without a gap.
            let page = try await store.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)
            #expect(page.changes.map(\.seq) == Array((head + 1)...(head + 13)))
            #expect(Set(page.changes.map(\.id)) == Set(created.map(\.description) + [existing.id.description]))
            for id in created { #expect(try await store.item(id) != nil) }
        }
    }

    /// PUTs without an idempotency key queued together: their updates run ahead in one statement
    /// (`PlannedUpdate`), the rest of each write after; a second PUT of the same item runs after
    /// the first, and the log holds every write once, in the order they were applied.
    @Test(.timeLimit(.minutes(10)))
    func putsOfOneBatchUpdateTheirItemsInOneStatement() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            var items: [Item] = []
            for n in 0..<8 { items.append(try await store.createItem(id: nil, draft: Self.draft(n), origin: Self.erin, idempotency: nil).value) }
            let head = try await store.resolve(.now)
            // Each item once (quantity 100 + n, some at version 1 only), the first item twice more
            // (the three in the order they queue, which the tasks decide), the second with a key.
            let puts: [(item: Item, quantity: Int, precondition: VersionPrecondition?, key: String?)] =
                items.enumerated().map { ($1, 100 + $0, $0 % 2 == 0 && $0 > 0 ? .oneOf([1]) : nil, nil) }
                + [(items[0], 200, nil, nil), (items[0], 201, nil, nil), (items[1], 300, nil, "key-1")]
            let (results, before, after) = try await Self.inOneBatch(
                store,
                puts.map { put in
                    {
                        let idempotency = put.key.map {
                            IdempotentRequest<Item>(key: IdempotencyKey(user: "erin", scope: .items, key: $0), fingerprint: "PUT \($0)") { _ in nil }
                        }
                        return try await store.updateItem(
                            put.item.id, draft: Self.draft(put.quantity), precondition: put.precondition, origin: Self.erin,
                            idempotency: idempotency
                        ).value
                    }
                })
            #expect(after.runAgainWithSavepoints == before.runAgainWithSavepoints)
            // One planned update per item: the 8 first PUTs; the repeats and the keyed one run as usual.
            #expect(after.itemWritesAhead == before.itemWritesAhead + 8)
            for index in 1..<8 { #expect(results[index]?.status == .inStock(quantity: 100 + index)) }
            // The first item's three PUTs one after another; the keyed PUT after the planned one.
            #expect(Set([results[0]?.version, results[8]?.version, results[9]?.version]) == [2, 3, 4])
            #expect(results[1]?.version == 2 && results[10]?.version == 3)
            let page = try await store.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)
            #expect(page.changes.map(\.seq) == Array((head + 1)...(head + Int64(puts.count))))
            // Each item's entries go up in version, and the last is the item as stored.
            var last: [String: Item] = [:]
            for change in page.changes {
                let value = try JSONCoding.decoder().decode(Item.self, from: Data(try #require(change.valueJSON).utf8))
                if let previous = last[change.id] { #expect(value.version == previous.version + 1) }
                last[change.id] = value
            }
            for item in items { #expect(try await store.item(item.id) == last[item.id.description]) }
        }
    }

    /// PUTs with idempotency keys queued together: their keys are claimed and their stored answers
    /// read in one statement each (`PostgresWrite.claimAhead`); the fresh ones' updates run ahead
    /// in one statement, a replay writes nothing, and a refusal is stored for its key. Each key's
    /// answer replays afterwards as the batch decided it.
    @Test(.timeLimit(.minutes(10)))
    func keyedPutsOfOneBatchClaimTheirKeysAheadAndApplyOnce() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            var created: [Item] = []
            for n in 0..<6 { created.append(try await store.createItem(id: nil, draft: Self.draft(n), origin: Self.erin, idempotency: nil).value) }
            let items = created
            @Sendable func request(_ key: String) -> IdempotentRequest<Item> {
                IdempotentRequest(key: IdempotencyKey(user: "erin", scope: .items, key: key), fingerprint: "PUT \(key)") { result in
                    switch result {
                    case .success(let item): StoredResponse(bytes: Array("ok \(item.version)".utf8))
                    case .failure(let error): StoredResponse(bytes: Array("refused \(error)".utf8))
                    }
                }
            }
            @Sendable func put(_ index: Int, _ key: String, quantity: Int, precondition: VersionPrecondition? = nil) async throws -> Replayable<Item> {
                try await store.updateItem(
                    items[index].id, draft: Self.draft(quantity), precondition: precondition, origin: Self.erin, idempotency: request(key))
            }
            // A request decided before the batch, sent again in it.
            _ = try await put(5, "done", quantity: 50)
            let head = try await store.resolve(.now)
            let writes: [@Sendable () async throws -> String] = (0..<4).map { index in
                { try await put(index, "key-\(index)", quantity: 100 + index).value.status == .inStock(quantity: 100 + index) ? "applied" : "wrong" }
            } + [
                {
                    guard case .replayed(let stored) = try await put(5, "done", quantity: 50) else { return "fresh" }
                    return String(decoding: stored.bytes, as: UTF8.self)
                },
                {
                    do {
                        _ = try await put(4, "key-4", quantity: 104, precondition: .oneOf([7]))
                        return "applied"
                    } catch {
                        return "refused"
                    }
                },
            ]
            let (outcomes, before, after) = try await Self.inOneBatch(store, writes)
            #expect(after.runAgainWithSavepoints == before.runAgainWithSavepoints)
            // The four fresh PUTs and the refused one were planned; the replay was not.
            #expect(after.itemWritesAhead == before.itemWritesAhead + 5)
            #expect(outcomes == [0: "applied", 1: "applied", 2: "applied", 3: "applied", 4: "ok 2", 5: "refused"])
            let page = try await store.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)
            #expect(Set(page.changes.map(\.id)) == Set(items[0..<4].map(\.id.description)))
            #expect(page.changes.count == 4)
            #expect(try await store.item(items[4].id)?.version == 1)
            #expect(try await store.item(items[5].id)?.version == 2)
            // Each key replays what the batch decided.
            for index in 0..<4 {
                guard case .replayed(let stored) = try await put(index, "key-\(index)", quantity: 100 + index) else {
                    Issue.record("key-\(index) ran again")
                    continue
                }
                #expect(String(decoding: stored.bytes, as: UTF8.self) == "ok 2")
            }
            guard case .replayed(let refusal) = try await put(4, "key-4", quantity: 104, precondition: .oneOf([7])) else {
                Issue.record("key-4 ran again")
                return
            }
            #expect(String(decoding: refusal.bytes, as: UTF8.self).hasPrefix("refused "))
            #expect(try await store.resolve(.now) == head + 4)
        }
    }

    /// POSTs with idempotency keys queued together: the fresh ones insert in one statement; a
    /// replay of a create decided before inserts nothing and answers the first item.
    @Test(.timeLimit(.minutes(10)))
    func keyedPostsOfOneBatchInsertAheadAndAReplayInsertsNothing() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            @Sendable func request(_ key: String) -> IdempotentRequest<Item> {
                IdempotentRequest(key: IdempotencyKey(user: "erin", scope: .items, key: key), fingerprint: "POST \(key)") { result in
                    guard case .success(let item) = result else { return nil }
                    return StoredResponse(bytes: Array(item.id.description.utf8))
                }
            }
            let first = try await store.createItem(id: nil, draft: Self.draft(0), origin: Self.erin, idempotency: request("first")).value
            let head = try await store.resolve(.now)
            let writes: [@Sendable () async throws -> String] = (0..<3).map { index in
                { try await store.createItem(id: nil, draft: Self.draft(10 + index), origin: Self.erin, idempotency: request("new-\(index)")).value.name }
            } + [
                {
                    guard case .replayed(let stored) = try await store.createItem(id: nil, draft: Self.draft(0), origin: Self.erin, idempotency: request("first"))
                    else { return "fresh" }
                    return String(decoding: stored.bytes, as: UTF8.self)
                }
            ]
            let (answers, before, after) = try await Self.inOneBatch(store, writes)
            #expect(after.runAgainWithSavepoints == before.runAgainWithSavepoints)
            #expect(after.itemWritesAhead == before.itemWritesAhead + 3)
            #expect(answers == [0: "Item 10", 1: "Item 11", 2: "Item 12", 3: first.id.description])
            #expect(try await store.resolve(.now) == head + 3)
        }
    }

    /// POSTs without an idempotency key queued together: their inserts run ahead in one statement
    /// (`PlannedInsert`); one naming an id that exists is refused alone when the batch runs again.
    @Test(.timeLimit(.minutes(10)))
    func postsOfOneBatchInsertInOneStatement() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            let existing = try await store.createItem(id: nil, draft: Self.draft(0), origin: Self.erin, idempotency: nil).value
            for refused in [false, true] {
                let head = try await store.resolve(.now)
                let ids: [ItemID?] = [ItemID.random(), nil, ItemID.random(), nil, nil] + (refused ? [existing.id] : [])
                let writes: [@Sendable () async throws -> Result<Item, Failure>] = ids.enumerated().map { index, id in
                    {
                        await Result<Item, any Error> {
                            try await store.createItem(id: id, draft: Self.draft(10 + index), origin: Self.erin, idempotency: nil).value
                        }.mapError(Failure.init)
                    }
                }
                let (results, before, after) = try await Self.queuedTogether(store, writes)
                #expect(after.itemWritesAhead == before.itemWritesAhead + ids.count)
                #expect(after.runAgainWithSavepoints == before.runAgainWithSavepoints + (refused ? 1 : 0))
                for index in 0..<5 {
                    let item = try #require(try results[index]?.get())
                    #expect(item.status == .inStock(quantity: 10 + index) && item.version == 1)
                    if let id = ids[index] { #expect(item.id == id) }
                    #expect(try await store.item(item.id) == item)
                }
                if refused { #expect(results[5]?.failure == Failure(StoreError.alreadyExists(existing.id))) }
                let page = try await store.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)
                #expect(page.changes.map(\.seq) == Array((head + 1)...(head + 5)))
            }
        }
    }

    /// A planned PUT refused (a stale version, a missing item) among planned ones: the batch runs
    /// again with savepoints, the refused ones answered alone and the others applied once.
    @Test(.timeLimit(.minutes(10)))
    func aRefusedPlannedPutIsAnsweredAloneAndTheOthersApplyOnce() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            var items: [Item] = []
            for n in 0..<4 { items.append(try await store.createItem(id: nil, draft: Self.draft(n), origin: Self.erin, idempotency: nil).value) }
            let head = try await store.resolve(.now)
            let missing = ItemID.random()
            let targets: [(id: ItemID, precondition: VersionPrecondition?)] =
                items.map { ($0.id, .oneOf([1])) } + [(items[0].id, .oneOf([7])), (missing, nil)]
            let writes: [@Sendable () async throws -> Result<Item, Failure>] = targets.enumerated().map { index, target in
                {
                    await Result<Item, any Error> {
                        try await store.updateItem(
                            target.id, draft: Self.draft(50 + index), precondition: target.precondition, origin: Self.erin, idempotency: nil
                        ).value
                    }.mapError(Failure.init)
                }
            }
            let (results, before, after) = try await Self.queuedTogether(store, writes)
            #expect(after.runAgainWithSavepoints == before.runAgainWithSavepoints + 1)
            for index in 0..<4 { #expect(try results[index]?.get().version == 2) }
            // items[0] at version 1 was PUT by its own write too, so version 7 is stale either way: the
            // refusal names version 1 or 2, as the two writes of items[0] were queued (the tasks race).
            #expect(
                [1, 2].map { Failure(StoreError.preconditionFailed(currentVersion: $0)) }.contains(results[4]?.failure),
                "\(String(describing: results[4]))")
            #expect(results[5]?.failure == Failure(StoreError.notFound("no item \(missing)")))
            let page = try await store.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)
            #expect(page.changes.map(\.seq) == Array((head + 1)...(head + 4)))
            for item in items { #expect(try await store.item(item.id)?.version == 2) }
        }
    }

    /// Commands of several devices queued together: their devices' rows and items are read ahead
    /// (`readAhead`), and a row one write of the batch changed is read again by the next. Two
    /// devices save the same item in one batch: one writes it, the other finds it changed (a
    /// conflict), as when they come one after another.
    @Test(.timeLimit(.minutes(10)))
    func commandsOfOneBatchReadAheadAndSeeEachOthersWrites() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            let shared = try await store.createItem(id: nil, draft: Self.draft(1), origin: Self.erin, idempotency: nil).value
            let other = try await store.createItem(id: nil, draft: Self.draft(2), origin: Self.erin, idempotency: nil).value
            let devices = ["laptop", "phone", "tablet", "watch"].map { ClientID(stored: $0) }
            for (n, device) in devices.prefix(2).enumerated() {
                _ = try await store.runCommand(.openEdit(itemID: shared.id), clientID: device, origin: Self.erin, idempotency: nil)
                _ = try await store.runCommand(.updateDraft(draft: Self.draft(10 + n)), clientID: device, origin: Self.erin, idempotency: nil)
            }
            _ = try await store.runCommand(.openEdit(itemID: other.id), clientID: devices[2], origin: Self.erin, idempotency: nil)
            let head = try await store.resolve(.now)
            let commands: [(Command, ClientID)] = [
                (.save(onConflict: .alert), devices[0]), (.save(onConflict: .alert), devices[1]), (.updateDraft(draft: Self.draft(30)), devices[2]),
                (.openEdit(itemID: other.id), devices[3]),
            ]
            let (outcomes, before, after) = try await Self.queuedTogether(
                store,
                commands.map { command, device in
                    { try await store.runCommand(command, clientID: device, origin: Self.erin, idempotency: nil).value }
                })
            #expect(after.commandsReadAhead == before.commandsReadAhead + 4)
            #expect(after.runAgainWithSavepoints == before.runAgainWithSavepoints)
            // One save wrote the item; the other met it changed and holds the conflict.
            let saved = try #require(await store.item(shared.id))
            #expect(saved.version == 2)
            let savers = [outcomes[0], outcomes[1]].compactMap { $0 }
            #expect(savers.compactMap(\.item) == [saved])
            #expect(savers.filter { if case .conflict? = $0.navigation.state.destination { true } else { false } }.count == 1)
            if case .edit(let id, _, let draft)? = outcomes[2]?.navigation.state.destination {
                #expect(id == other.id && draft == Self.draft(30))
            } else {
                Issue.record("the tablet's draft: \(String(describing: outcomes[2]?.navigation.state.destination))")
            }
            if case .edit(let id, let version, _)? = outcomes[3]?.navigation.state.destination {
                #expect(id == other.id && version == 1)
            } else {
                Issue.record("the watch's edit: \(String(describing: outcomes[3]?.navigation.state.destination))")
            }
            let page = try await store.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)
            #expect(page.changes.filter { $0.id == shared.id.description }.count == 1)
        }
    }

    /// One sequence of writes, run one at a time and then as one batch (read ahead, device rows
    /// written at the batch's end): the same navigations, items and log. The batch holds a device's
    /// three commands, a save whose item another device then saves (a conflict), an item saved
    /// (its update kept for the batch's one statement) and then deleted while two devices show it
    /// (its delete alert on one, on the other's path: both repaired, and both opened it earlier in
    /// the batch), and a device's first write.
    @Test(.timeLimit(.minutes(10)))
    func aBatchOfCommandsEndsAsTheSameCommandsOneAtATime() async throws {
        let x = ItemID.random(), y = ItemID.random()
        @Sendable func device(_ name: String) -> ClientID { ClientID(stored: name) }
        let writes: [@Sendable (PostgresStore) async throws -> Void] = [
            { _ = try await $0.runCommand(.updateDraft(draft: Self.draft(5)), clientID: device("a"), origin: Self.erin, idempotency: nil) },
            { _ = try await $0.runCommand(.openEdit(itemID: x), clientID: device("b"), origin: Self.erin, idempotency: nil) },
            { _ = try await $0.runCommand(.save(onConflict: .alert), clientID: device("a"), origin: Self.erin, idempotency: nil) },
            { _ = try await $0.runCommand(.openDeleteAlert(itemID: y), clientID: device("a"), origin: Self.erin, idempotency: nil) },
            { _ = try await $0.runCommand(.push(route: .item(id: y)), clientID: device("d"), origin: Self.erin, idempotency: nil) },
            { _ = try await $0.runCommand(.updateDraft(draft: Self.draft(9)), clientID: device("e"), origin: Self.erin, idempotency: nil) },
            { _ = try await $0.runCommand(.save(onConflict: .alert), clientID: device("e"), origin: Self.erin, idempotency: nil) },
            { _ = try await $0.deleteItem(y, precondition: nil, origin: Self.erin, idempotency: nil) },
            { _ = try await $0.runCommand(.updateDraft(draft: Self.draft(7)), clientID: device("b"), origin: Self.erin, idempotency: nil) },
            { _ = try await $0.runCommand(.save(onConflict: .alert), clientID: device("b"), origin: Self.erin, idempotency: nil) },
            { _ = try await $0.runCommand(.openEdit(itemID: x), clientID: device("c"), origin: Self.erin, idempotency: nil) },
        ]
        struct Ending: Equatable {
            /// Each device's state, its items' times left out (the two runs differ in them).
            var navigations: [String: String] = [:]
            var versions: [String: Int] = [:]
            var x: Item?
            var y: Item?
            var log: [String] = []
        }
        func run(together: Bool) async throws -> (Ending, PostgresCommitter.Statistics, PostgresCommitter.Statistics) {
            try await withDaemons(1) { stores, _ in
                let store = stores[0]
                try await store.createItem(id: x, draft: Self.draft(1), origin: Self.erin, idempotency: nil)
                try await store.createItem(id: y, draft: Self.draft(2), origin: Self.erin, idempotency: nil)
                try await store.runCommand(.openEdit(itemID: x), clientID: device("a"), origin: Self.erin, idempotency: nil)
                try await store.runCommand(.openEdit(itemID: x), clientID: device("d"), origin: Self.erin, idempotency: nil)
                try await store.runCommand(.openEdit(itemID: y), clientID: device("e"), origin: Self.erin, idempotency: nil)
                let head = try await store.resolve(.now)
                let before = store.committer.statistics
                if together {
                    let release = Gate()
                    let holder = try await Self.hold(store, until: release)
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        // Queued one after another, so that the batch holds them in this order.
                        for (index, write) in writes.enumerated() {
                            group.addTask { try await write(store) }
                            try await eventually("write \(index) is queued") { store.committer.pendingCount > index }
                        }
                        release.open()
                        try await group.waitForAll()
                    }
                    try await holder.value
                } else {
                    for write in writes { try await write(store) }
                }
                var ending = Ending()
                for navigation in try await store.navigations(user: "erin") {
                    ending.navigations[navigation.clientID.rawValue] = "\(navigation.state)".replacing(
                        /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000/, with: "(time)")
                    ending.versions[navigation.clientID.rawValue] = navigation.version
                }
                ending.x = try await store.item(x)
                ending.y = try await store.item(y)
                let page = try await store.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item, .navigation]), limit: 100)
                ending.log = page.changes.map { "\($0.entity.rawValue) \($0.op.rawValue) \($0.id)" }
                return (ending, before, store.committer.statistics)
            }
        }
        let (oneAtATime, _, _) = try await run(together: false)
        let (together, before, after) = try await run(together: true)
        #expect(after.batches == before.batches + 2)
        #expect(after.commandsReadAhead > before.commandsReadAhead)
        #expect(after.runAgainWithSavepoints == before.runAgainWithSavepoints)
        #expect(together.log.count == oneAtATime.log.count)
        #expect(together.navigations == oneAtATime.navigations)
        #expect(together.versions == oneAtATime.versions)
        #expect(together.x?.version == oneAtATime.x?.version && together.x?.status == oneAtATime.x?.status)
        #expect(together.x?.name == oneAtATime.x?.name)
        #expect(together.y == nil && oneAtATime.y == nil)
        #expect(together.log == oneAtATime.log)
    }

    /// A write that met a state moved under it (`WriteRetry`, as a deadlock or a serialization
    /// failure) rolls back alone and runs again in a later batch; the others of its batch commit once.
    @Test(.timeLimit(.minutes(10)))
    func aWriteToRunAgainIsRetriedAloneInALaterBatch() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            let head = try await store.resolve(.now)
            let release = Gate()
            let holder = try await Self.hold(store, until: release)
            let runs = Runs(1)
            let retriedID = ItemID.random()
            let outcomes = try await withThrowingTaskGroup(of: Item.self) { group in
                group.addTask {
                    try await store.write { write in
                        let run = runs.next(0)
                        let item = try await WriteRules.createItem(write, id: retriedID, draft: Self.draft(1), origin: Self.erin)
                        // Its batch runs first without savepoints, then again with them: it asks
                        // to run again both times, and so runs a third time, in a later batch.
                        if run <= 2 { throw WriteRetry() }
                        return item
                    }
                }
                for n in 2...6 {
                    group.addTask { try await store.createItem(id: nil, draft: Self.draft(n), origin: Self.erin, idempotency: nil).value }
                }
                try await eventually("every write is queued") { store.committer.pendingCount >= 6 }
                release.open()
                return try await group.reduce(into: [Item]()) { $0.append($1) }
            }
            try await holder.value
            #expect(outcomes.count == 6)
            #expect(runs.total == 3)
            #expect(store.committer.statistics.runAgainWithSavepoints == 1)
            #expect(store.committer.statistics.retries == 1)
            let page = try await store.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)
            // Six entries, none from the rolled-back first run; the retried write's comes last.
            #expect(page.changes.map(\.seq) == Array((head + 1)...(head + 6)))
            #expect(page.changes.filter { $0.id == retriedID.description }.count == 1)
            #expect(page.changes.last?.id == retriedID.description)
        }
    }

    /// A write's attempts are the batches it runs in. Its first batch runs it twice (without
    /// savepoints, then, since it failed, with them) and counts once; each later batch, where it
    /// runs alone, once. A write that asks to run again in each of its first `attempts - 1`
    /// batches commits in the next; one that asks in every batch is answered `unavailable` after
    /// `attempts` of them. The others of its first batch commit once either way.
    @Test(.timeLimit(.minutes(10)), arguments: [false, true])
    func aWriteRunsInAtMostAttemptsBatches(asksInEveryBatch: Bool) async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            let attempts = PostgresStore.attempts
            // Runs 1 and 2 are its first batch's; run k > 2 is batch k - 1's.
            let runsAsking = asksInEveryBatch ? attempts + 1 : attempts
            let head = try await store.resolve(.now)
            let runs = Runs(1)
            let retriedID = ItemID.random()
            let retried: @Sendable () async throws -> Result<Item, any Error> = {
                await Result {
                    try await store.write { write in
                        let run = runs.next(0)
                        let item = try await WriteRules.createItem(write, id: retriedID, draft: Self.draft(1), origin: Self.erin)
                        if run <= runsAsking { throw WriteRetry() }
                        return item
                    }
                }
            }
            let others = (2...4).map { n in
                { @Sendable () async throws -> Result<Item, any Error> in
                    .success(try await store.createItem(id: nil, draft: Self.draft(n), origin: Self.erin, idempotency: nil).value)
                }
            }
            let run = try await Self.queuedTogether(store, [retried] + others)
            #expect(run.answers.count == 4)
            let outcome = run.answers[0]
            let page = try await store.readChanges(after: head, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)
            // Either way it ran in `attempts` batches, and was queued again after all but the last.
            #expect(runs.total == attempts + 1)
            #expect(run.after.retries == run.before.retries + attempts - 1)
            if asksInEveryBatch {
                switch outcome {
                case .failure(StoreError.unavailable(let message))?:
                    #expect(message == "the write met concurrent changes \(attempts) times; retry it")
                default:
                    Issue.record("expected unavailable, got \(String(describing: outcome))")
                }
                #expect(page.changes.map(\.seq) == Array((head + 1)...(head + 3)))
                #expect(!page.changes.contains { $0.id == retriedID.description })
            } else {
                #expect(try outcome?.get().id == retriedID)
                #expect(page.changes.map(\.seq) == Array((head + 1)...(head + 4)))
                #expect(page.changes.filter { $0.id == retriedID.description }.count == 1)
            }
        }
    }

    /// Two daemons' batches that lock two items in opposite orders deadlock; PostgreSQL aborts one
    /// statement, whose write rolls back alone and runs again after the other batch committed:
    /// both writes are applied once.
    @Test(.timeLimit(.minutes(10)))
    func aDeadlockBetweenTwoDaemonsIsRetriedAlone() async throws {
        try await withDaemons(2) { daemons, _ in
            let first = try await daemons[0].createItem(id: nil, draft: Self.draft(1), origin: Self.erin, idempotency: nil).value
            let second = try await daemons[0].createItem(id: nil, draft: Self.draft(2), origin: Self.erin, idempotency: nil).value
            let locked = [Gate(), Gate()]
            let runs = Runs(2)
            let outcomes = try await withThrowingTaskGroup(of: Item.self) { group in
                for (daemon, order) in [(0, [first, second]), (1, [second, first])] {
                    group.addTask {
                        try await daemons[daemon].write { write in
                            let run = runs.next(daemon)
                            _ = try await write.liveItem(order[0].id)
                            if run == 1 {
                                locked[daemon].open()
                                await locked[1 - daemon].wait()
                            }
                            let item = try #require(try await write.liveItem(order[1].id))
                            return try await write.updateItem(item, fields: try ValidDraft(Self.draft(10 + daemon)), at: 0)
                        }
                    }
                }
                return try await group.reduce(into: [Item]()) { $0.append($1) }
            }
            #expect(outcomes.count == 2)
            #expect(runs.total == 3, "one of the two ran again")
            #expect(daemons[0].committer.statistics.retries + daemons[1].committer.statistics.retries == 1)
        }
    }

    /// A COMMIT that fails (here a deferred constraint one write of the batch broke) answers every
    /// write of the batch with an error, and none of them is applied.
    @Test(.timeLimit(.minutes(10)))
    func aFailedCommitAnswersEveryWriteOfTheBatchAndAppliesNone() async throws {
        try await withDaemons(1) { stores, url in
            let store = stores[0]
            _ = try await withConnection(url) { connection in
                try await connection.query(
                    """
                    CREATE TABLE commit_probe (id int PRIMARY KEY, parent int REFERENCES commit_probe DEFERRABLE INITIALLY DEFERRED)
                    """, logger: .init(label: "test"))
            }
            let head = try await store.resolve(.now)
            let release = Gate()
            let holder = try await Self.hold(store, until: release)
            let ids = (0..<5).map { _ in ItemID.random() }
            let results = try await withThrowingTaskGroup(of: Result<Item, Failure>.self) { group in
                for (n, id) in ids.enumerated() {
                    group.addTask {
                        await Result { try await store.createItem(id: id, draft: Self.draft(n), origin: Self.erin, idempotency: nil).value }
                            .mapError(Failure.init)
                    }
                }
                group.addTask {
                    await Result {
                        try await store.write { write in
                            try await write.query("INSERT INTO commit_probe VALUES (1, 42)")
                            return try await WriteRules.createItem(write, id: nil, draft: Self.draft(9), origin: Self.erin)
                        }
                    }.mapError(Failure.init)
                }
                try await eventually("every write is queued") { store.committer.pendingCount >= 6 }
                release.open()
                return try await group.reduce(into: [Result<Item, Failure>]()) { $0.append($1) }
            }
            try await holder.value
            #expect(results.count == 6)
            for result in results {
                #expect(result.failure == .unavailable, "\(result)")
            }
            #expect(try await store.resolve(.now) == head)
            for id in ids { #expect(try await store.item(id) == nil) }
            // The committer goes on: the next write commits.
            #expect(try await store.createItem(id: nil, draft: Self.draft(7), origin: Self.erin, idempotency: nil).value.version == 1)
        }
    }

    /// The task that runs a batch is one writer's request; its cancellation (a client gone) does
    /// not abandon the batch: the write commits, and its caller and the writes queued behind it
    /// get their real outcomes.
    @Test(.timeLimit(.minutes(10)))
    func aCancelledWritersBatchStillCommits() async throws {
        try await withDaemons(1) { stores, _ in
            let store = stores[0]
            let head = try await store.resolve(.now)
            let entered = Gate()
            let release = Gate()
            let id = ItemID.random()
            let writer = Task {
                try await store.write { write in
                    entered.open()
                    await release.wait()
                    return try await WriteRules.createItem(write, id: id, draft: Self.draft(1), origin: Self.erin)
                }
            }
            await entered.wait()
            let behind = Task { try await store.createItem(id: nil, draft: Self.draft(2), origin: Self.erin, idempotency: nil).value }
            try await eventually("the second write is queued") { store.committer.pendingCount >= 1 }
            writer.cancel()
            release.open()
            #expect(try await writer.value.id == id)
            #expect(try await behind.value.version == 1)
            #expect(try await store.item(id) != nil)
            #expect(try await store.resolve(.now) == head + 2)
        }
    }

    /// Three daemons, sixteen writers each, creating and updating at once: every write is
    /// acknowledged, and every daemon's log is the same, contiguous, one entry per write.
    @Test(.timeLimit(.minutes(10)))
    func threeDaemonsOfSixteenWritersEachKeepOneContiguousExactLog() async throws {
        try await withDaemons(3) { daemons, _ in
            let head = try await daemons[0].resolve(.now)
            let perWriter = 10
            let acknowledged = try await withThrowingTaskGroup(of: [String].self) { group in
                for writer in 0..<48 {
                    let daemon = daemons[writer % 3]
                    group.addTask {
                        var ids: [String] = []
                        var item = try await daemon.createItem(id: nil, draft: Self.draft(writer), origin: Self.erin, idempotency: nil).value
                        ids.append(item.id.description)
                        for n in 1..<perWriter {
                            item = try await daemon.updateItem(
                                item.id, draft: Self.draft(n), precondition: .oneOf([item.version]), origin: Self.erin, idempotency: nil
                            ).value
                            ids.append(item.id.description)
                        }
                        return ids
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(acknowledged.count == 48 * perWriter)
            let last = head + Int64(acknowledged.count)
            for daemon in daemons {
                try await eventually("the daemon's hub reaches the head") { daemon.hub.head >= last }
                var changes: [ChangeEntry] = []
                var after = head
                while after < last {
                    let page = try await daemon.readChanges(after: after, filter: FeedFilter(user: "erin", topics: [.item]), limit: 200)
                    changes += page.changes
                    after = page.changes.last?.seq ?? last
                }
                #expect(changes.map(\.seq) == Array((head + 1)...last))
                #expect(changes.map(\.id).sorted() == acknowledged.sorted())
            }
            let batched = daemons.map { $0.committer.statistics }
            #expect(batched.map(\.writes).reduce(0, +) >= acknowledged.count)
        }
    }
}

/// How many times each of a test's writes ran.
private final class Runs: Sendable {
    private let counts: Mutex<[Int]>

    init(_ writes: Int) {
        counts = Mutex(Array(repeating: 0, count: writes))
    }

    /// Counts a run of write `index`; returns which run it is (1 the first).
    func next(_ index: Int) -> Int {
        counts.withLock { counts in
            counts[index] += 1
            return counts[index]
        }
    }

    var total: Int { counts.withLock { $0.reduce(0, +) } }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
