import Foundation
import StockroomCore
import StockroomStorage
import Synchronization
import Testing

@testable import StockroomStore

/// The items `AppDatabase.item(_:)` keeps in memory: what a commit makes it forget, and that a read
/// racing a write never keeps the item as it was before the write.
@Suite("Item cache")
struct ItemCacheTests {
    static func item(_ name: String, version: Int = 1, id: ItemID = .random()) -> Item {
        Item(id: id, name: name, color: nil, status: .inStock(quantity: 1), version: version, createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0))
    }

    static func entry(_ entity: ChangeEntity, id: String, seq: Int64 = 1) -> ChangeEntry {
        ChangeEntry(
            seq: seq, entity: entity, op: .upsert, id: id, owner: nil, valueJSON: nil, originClientID: nil, originIdempotencyKey: nil,
            at: 0, epoch: "test")
    }

    static func generation(_ lookup: ItemCache.Lookup) -> UInt64? {
        if case .miss(let generation) = lookup { return generation }
        return nil
    }

    static func hit(_ lookup: ItemCache.Lookup) -> Item? {
        if case .hit(let item) = lookup { return item }
        return nil
    }

    @Test("a read that began before a commit changing items keeps nothing; one after it keeps what it read")
    func aReadOlderThanACommitKeepsNothing() throws {
        let cache = ItemCache()
        let old = Self.item("Keyboard")
        let before = try #require(Self.generation(cache.item(old.id)))
        // A commit changes another item while the read is under way: the read's item may be older
        // than some commit now, so it is not kept.
        cache.forget([Self.entry(.item, id: ItemID.random().description)])
        cache.keep(old, generation: before)
        #expect(cache.count == 0)
        let after = try #require(Self.generation(cache.item(old.id)))
        cache.keep(old, generation: after)
        #expect(Self.hit(cache.item(old.id)) == old)
    }

    @Test("a commit forgets the items it changed, and only those; one changing no item moves nothing")
    func aCommitForgetsItsItems() throws {
        let cache = ItemCache()
        let (keyboard, mouse) = (Self.item("Keyboard"), Self.item("Mouse"))
        for item in [keyboard, mouse] { cache.keep(item, generation: try #require(Self.generation(cache.item(item.id)))) }
        let pending = try #require(Self.generation(cache.item(ItemID.random())))
        cache.forget([Self.entry(.navigation, id: "phone"), Self.entry(.presence, id: "phone")])
        #expect(cache.count == 2)
        #expect(Self.generation(cache.item(ItemID.random())) == pending)
        cache.forget([Self.entry(.navigation, id: "phone"), Self.entry(.item, id: keyboard.id.description)])
        #expect(Self.hit(cache.item(keyboard.id)) == nil)
        #expect(Self.hit(cache.item(mouse.id)) == mouse)
        cache.forget(nil)
        #expect(cache.count == 0)
    }

    @Test("a full cache empties before it keeps one more")
    func aFullCacheEmpties() throws {
        let cache = ItemCache(capacity: 2)
        let items = [Self.item("A"), Self.item("B"), Self.item("C")]
        for item in items { cache.keep(item, generation: try #require(Self.generation(cache.item(item.id)))) }
        #expect(cache.count == 1)
        #expect(Self.hit(cache.item(items[2].id)) == items[2])
    }

    @Test("the store keeps an item it read, and a write of it forgets it")
    func theStoreKeepsWhatItReads() async throws {
        try await withTemporaryDatabase { database in
            let created = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            #expect(database.itemCache.count == 0)
            #expect(try await database.item(created.id) == created)
            #expect(Self.hit(database.itemCache.item(created.id)) == created)
            _ = try await database.updateItem(created.id, draft: Sample.mouse, precondition: nil, origin: Sample.erin)
            #expect(database.itemCache.count == 0)
        }
    }

    /// Real threads: readers read one item as fast as they can while a writer replaces it; every
    /// read after a write returned finds that write or a later one, and no reader sees the item's
    /// version go back.
    @Test("reads racing writes never find an item older than the last write answered")
    func readsRacingWrites() async throws {
        try await withTemporaryDatabase { database in
            let created = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin).value
            let progress = WriterProgress()
            let writes = 300
            try await withThrowingTaskGroup(of: (stale: Int, backwards: Int).self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        var (stale, backwards, last) = (0, 0, 0)
                        while !progress.done.load(ordering: .acquiring) {
                            let floor = progress.answered.load(ordering: .acquiring)
                            let version = try await database.item(created.id)?.version ?? 0
                            if version < floor { stale += 1 }
                            if version < last { backwards += 1 }
                            last = version
                            // A read never suspends: let the writer have a thread of the pool.
                            await Task.yield()
                        }
                        return (stale, backwards)
                    }
                }
                group.addTask {
                    var stale = 0
                    for index in 0..<writes {
                        let draft = index.isMultiple(of: 2) ? Sample.bluetooth : Sample.keyboard
                        let written = try await database.updateItem(created.id, draft: draft, precondition: nil, origin: Sample.erin).value
                        progress.answered.store(written.version, ordering: .releasing)
                        if try await database.item(created.id)?.version != written.version { stale += 1 }
                    }
                    progress.done.store(true, ordering: .releasing)
                    return (stale, 0)
                }
                var total = (stale: 0, backwards: 0)
                for try await result in group {
                    total.stale += result.stale
                    total.backwards += result.backwards
                }
                #expect(total.stale == 0)
                #expect(total.backwards == 0)
            }
            #expect(try await database.item(created.id)?.version == writes + 1)
        }
    }
}

/// What the writer of `readsRacingWrites` has done so far, for its readers.
private final class WriterProgress: Sendable {
    /// The version of the last write answered.
    let answered = Atomic<Int>(1)
    let done = Atomic<Bool>(false)
}
