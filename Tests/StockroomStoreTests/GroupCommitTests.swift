import Foundation
import GRDB
import StockroomCore
import TestSupport
import Testing

import StockroomStorage
@testable import StockroomStore

@Suite("Group commit")
struct GroupCommitTests {
    /// What one queued write asked for, and what it got.
    enum Kind: Sendable {
        case update(Int)
        case create(ItemID, duplicate: Bool)
        case insertThenFail(ItemID)
    }

    struct Boom: Error {}

    /// At NORMAL a write that finds the writer idle runs on its caller's thread; what queues behind
    /// it still goes in one batch, as at FULL.
    @Test(arguments: AppDatabase.Synchronous.allCases)
    func writesQueuedTogetherShareOneCommitAndEachGetsItsOwnAnswer(synchronous: AppDatabase.Synchronous) async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            let database = try AppDatabase.open(path: path, synchronous: synchronous)
            let probe = Probe(database)
            let target = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let head = try await probe.head()

            var kinds: [Kind] = []
            for index in 0..<10 { kinds.append(.update(index)) }
            for index in 0..<10 { kinds.append(.create(index < 5 ? target.id : .random(), duplicate: index < 5)) }
            for _ in 0..<10 { kinds.append(.insertThenFail(.random())) }
            kinds.shuffle()

            // Given the committer held busy by a write of its own, so that every write below queues behind it.
            let entered = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let holder = Task.detached {
                try await database.write { _ in
                    entered.signal()
                    release.wait()
                }
            }
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    entered.wait()
                    continuation.resume()
                }
            }
            let before = database.committer.statistics

            // When 30 writes queue at once, a third of them failing in different ways.
            let results = try await withThrowingTaskGroup(of: (Int, Result<Item, Failure>).self) { group in
                for (index, kind) in kinds.enumerated() {
                    group.addTask {
                        do {
                            switch kind {
                            case .update(let n):
                                let draft = Draft(name: "Keyboard \(n)", color: nil, status: .inStock(quantity: n))
                                return (index, .success(try await database.updateItem(target.id, draft: draft, precondition: nil, origin: Sample.erin).value))
                            case .create(let id, _):
                                return (index, .success(try await database.createItem(id: id, draft: Sample.mouse, origin: Sample.otto).value))
                            case .insertThenFail(let id):
                                _ = try await database.write { db in
                                    _ = try database.applyCreateItem(db, id: id, draft: Sample.mouse, origin: Sample.otto)
                                    throw Boom()
                                }
                                return (index, .failure(.none))
                            }
                        } catch {
                            return (index, .failure(Failure(error)))
                        }
                    }
                }
                try await eventually("every write is queued") { database.committer.pendingCount >= kinds.count }
                release.signal()
                var results: [Int: Result<Item, Failure>] = [:]
                for try await (index, result) in group { results[index] = result }
                return results
            }
            try await holder.value

            // Then they committed as one transaction,
            let after = database.committer.statistics
            #expect(after.batches - before.batches == 1)
            #expect(after.writes - before.writes == kinds.count)

            // each write got its own answer,
            var updated: [Item] = []
            var created: [Item] = []
            for (index, kind) in kinds.enumerated() {
                let result = try #require(results[index])
                switch kind {
                case .update:
                    updated.append(try result.get())
                case .create(let id, let duplicate):
                    if duplicate {
                        #expect(result == .failure(.alreadyExists(id)))
                    } else {
                        created.append(try result.get())
                    }
                case .insertThenFail:
                    #expect(result == .failure(.other("Boom()")), "\(result)")
                }
            }
            #expect(Set(updated.map(\.version)) == Set(2...11))
            #expect(created.count == 5)

            // the failing ones changed nothing, and the log holds exactly the rest, contiguous, in commit order.
            let logged = try await probe.changes(after: head)
            #expect(logged.map(\.seq) == Array(head + 1...head + 15))
            let loggedUpdates = logged.compactMap { change -> Item? in
                guard case .item(let item) = change.value, item.id == target.id else { return nil }
                return item
            }
            #expect(loggedUpdates == updated.sorted { $0.version < $1.version })
            #expect(Set(logged.compactMap { change -> ItemID? in
                guard case .item(let item) = change.value, item.id != target.id else { return nil }
                return item.id
            }) == Set(created.map(\.id)))

            // And everything acknowledged is on disk, as another connection to the file reads it.
            let reopened = try AppDatabase.open(path: path)
            #expect(try await reopened.item(target.id) == updated.max { $0.version < $1.version })
            for item in created { #expect(try await reopened.item(item.id) == item) }
            #expect(try await Probe(reopened).count("items") == 6)
            if synchronous == .normal {
                // After a batch of several the next write queues too (writes are coming together);
                // once a batch took one, a write alone runs on its caller's thread again.
                _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
                #expect(database.committer.statistics.inlineWrites == after.inlineWrites)
                _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
                #expect(database.committer.statistics.inlineWrites == after.inlineWrites + 1)
            }
        }
    }

    /// A write alone runs without a savepoint: its own failure must still undo what it wrote, be
    /// its own answer, and leave the log and the writer as they were.
    @Test(arguments: AppDatabase.Synchronous.allCases)
    func aWriteAloneThatFailsChangesNothing(synchronous: AppDatabase.Synchronous) async throws {
        try await withTemporaryDatabase(synchronous: synchronous) { database in
            let probe = Probe(database)
            let head = try await probe.head()
            let id = ItemID.random()
            await #expect(throws: Boom.self) {
                _ = try await database.write { db in
                    _ = try database.applyCreateItem(db, id: id, draft: Sample.mouse, origin: Sample.otto)
                    throw Boom()
                }
            }
            #expect(try await probe.count("items") == 0)
            #expect(try await probe.head() == head)
            #expect(try await probe.changes(after: head).isEmpty)
            // A domain error of a write alone is its own answer too, and the next write goes through.
            let item = try await database.createItem(id: id, draft: Sample.keyboard, origin: Sample.erin).value
            do {
                _ = try await database.createItem(id: id, draft: Sample.mouse, origin: Sample.otto)
                Issue.record("a second item with one id was created")
            } catch StoreError.alreadyExists(let existing) {
                #expect(existing == id)
            }
            #expect(try await database.item(id) == item)
            #expect(try await probe.changes(after: head).map(\.seq) == [head + 1])
        }
    }

    /// A write alone commits at once: at FULL on the writer's queue, at NORMAL on its caller's thread.
    @Test(arguments: AppDatabase.Synchronous.allCases)
    func aWriteAloneCommitsAtOnce(synchronous: AppDatabase.Synchronous) async throws {
        try await withTemporaryDatabase(synchronous: synchronous) { database in
            let before = database.committer.statistics
            _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
            let after = database.committer.statistics
            #expect(after.batches - before.batches == 1)
            #expect(after.writes - before.writes == 1)
            #expect(after.inlineWrites - before.inlineWrites == (synchronous == .normal ? 1 : 0))
        }
    }

    /// At NORMAL a write runs on its caller's thread only when nothing says writes are coming
    /// together: the server's hint counts its write alone, and the last batch took one write.
    @Test func atNormalAWriteRunsInlineOnlyWhenItsRequestIsAlone() async throws {
        let requests = WritesInFlight()
        try await withTemporaryDatabase(synchronous: .normal, writesInFlight: requests) { database in
            var inline = database.committer.statistics.inlineWrites
            // One request in flight (the writer's own): inline.
            requests.enter()
            _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
            #expect(database.committer.statistics.inlineWrites == inline + 1)
            inline = database.committer.statistics.inlineWrites
            // Another one in flight too: the write goes to the writer's queue.
            requests.enter()
            _ = try await database.createItem(id: nil, draft: Sample.mouse, origin: Sample.erin)
            #expect(database.committer.statistics.inlineWrites == inline)
            requests.leave()
            requests.leave()
            #expect(requests.count == 0)
            _ = try await database.createItem(id: nil, draft: Sample.mouse, origin: Sample.otto)
            #expect(database.committer.statistics.inlineWrites == inline + 1)
        }
    }

    /// A write on an event loop must not wait there for another process's write lock (a CLI command
    /// on the same file): at NORMAL its BEGIN does not wait, and the write queues to wait on the
    /// writer's queue instead, then commits once the lock is free.
    @Test func atNormalAWriteThatFindsTheLockTakenQueuesInsteadOfWaitingOnItsThread() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            // A long busy timeout: the queued write must outwait the other connection's lock
            // however slowly a busy machine gets this test to its ROLLBACK.
            let database = try AppDatabase.open(path: path, synchronous: .normal, busyTimeout: .seconds(60))
            _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
            let before = database.committer.statistics

            // Given another connection holding the write lock,
            var configuration = Configuration()
            configuration.allowsUnsafeTransactions = true
            let other = try DatabaseQueue(path: path, configuration: configuration)
            try other.inDatabase { db in try db.execute(sql: "BEGIN IMMEDIATE") }

            // when a write comes, it goes to the writer's queue (a batch there) rather than waiting inline;
            let write = Task { try await database.createItem(id: nil, draft: Sample.mouse, origin: Sample.otto).value }
            // (An inline attempt counts as a batch from its start until it finds the lock taken: a
            // batch counted with no inline write more is the queued one.)
            try await eventually("the write is queued") {
                let now = database.committer.statistics
                return now.batches != before.batches && now.inlineWrites == before.inlineWrites
            }
            #expect(database.committer.statistics.batches == before.batches + 1, "the write did not queue")
            try other.inDatabase { db in try db.execute(sql: "ROLLBACK") }

            // and once the lock is free it commits there.
            let item = try await write.value
            #expect(database.committer.statistics.inlineWrites == before.inlineWrites)
            #expect(try await database.item(item.id) == item)
        }
    }

    /// At NORMAL SQLite's automatic checkpoint is off on the writer (it would run in the COMMIT of
    /// a write applied on an event loop). Once the WAL is past 1,000 pages the checkpointer runs one
    /// on its own connection at the first pause in the writes, and the next write starts the WAL over.
    @Test func atNormalACheckpointRunsBesideTheWriterWhenTheWritesPause() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            let database = try AppDatabase.open(path: path, synchronous: .normal)
            let before = database.committer.statistics
            var ids: [ItemID] = []
            // Each write appends a few pages to the WAL.
            while try #require(database.committer.walPages) < WALLength.checkpointPages, ids.count < 2000 {
                let draft = Draft(name: "Item \(ids.count)", color: nil, status: .inStock(quantity: ids.count))
                ids.append(try await database.createItem(id: nil, draft: draft, origin: Sample.erin).value.id)
            }
            #expect(try #require(database.committer.walPages) >= WALLength.checkpointPages)

            // The writes pause: the checkpointer copies the WAL into the file,
            try await eventually("the checkpointer ran while the writes paused") {
                database.committer.statistics.quietCheckpoints != before.quietCheckpoints
            }
            let after = database.committer.statistics
            #expect(after.quietCheckpoints > before.quietCheckpoints, "no checkpoint ran while the writes paused")
            #expect(after.checkpoints == before.checkpoints, "the writer ran a checkpoint")
            #expect(after.inlineWrites - before.inlineWrites == ids.count, "every write ran on its caller's thread")

            // and the next write, finding all of it copied, starts the WAL over.
            _ = try await database.createItem(id: nil, draft: Sample.mouse, origin: Sample.otto)
            #expect(try #require(database.committer.walPages) < 100)
            #expect(try await database.item(ids.last!)?.status == .inStock(quantity: ids.count - 1))

            // The shutdown checkpoint truncates the WAL.
            try database.checkpoint()
            let walBytes = try #require(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int)
            #expect(walBytes == 0)
        }
    }

    /// When the writes never pause (here the checkpointer is held busy), the writer checkpoints on
    /// its own queue once the WAL reaches 4,000 pages: the WAL stays bounded, and everything written is there.
    @Test func atNormalTheWALStaysBoundedWhenTheWritesNeverPause() async throws {
        try await withTemporaryFolder { folder in
            let path = folder.appendingPathComponent("stockroom.sqlite").path
            let database = try AppDatabase.open(path: path, synchronous: .normal)
            let before = database.committer.statistics
            let held = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let holder = Thread {
                database.committer.excludingCheckpoints {
                    held.signal()
                    release.wait()
                }
            }
            holder.start()
            held.wait()
            defer { release.signal() }

            var ids: [ItemID] = []
            // About four pages each: 2,000 writes are over 8,000 pages without a checkpoint.
            for index in 0..<2000 {
                let draft = Draft(name: "Item \(index)", color: nil, status: .inStock(quantity: index))
                ids.append(try await database.createItem(id: nil, draft: draft, origin: Sample.erin).value.id)
            }
            let after = database.committer.statistics
            #expect(after.quietCheckpoints == before.quietCheckpoints)
            #expect(after.checkpoints - before.checkpoints >= 1)
            // Most on their caller's thread. Those that came while a checkpoint ran on the writer's
            // queue queued, and so did any that came before that queue, done, saw itself empty: how
            // many depends on how the threads are scheduled.
            #expect(after.inlineWrites - before.inlineWrites > 1000)
            let walBytes = try #require(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int)
            #expect(walBytes < 4500 * (4096 + 24), "the WAL is \(walBytes) bytes")

            let reopened = try AppDatabase.open(path: path)
            #expect(try await Probe(reopened).count("items") == 2000)
            #expect(try await reopened.item(ids[1999])?.status == .inStock(quantity: 1999))
        }
    }
}
