import Foundation
import HTTPTypes
import NIOCore
import StockroomCore
import Testing

@testable import StockroomServer

/// The answers of `GET /v1/items/{id}` kept by item: used only for an equal item, built again for any other.
@Suite("Item reply cache")
struct ItemReplyCacheTests {
    static func item(_ name: String, version: Int = 1, id: ItemID = .random()) -> Item {
        Item(id: id, name: name, color: nil, status: .inStock(quantity: 1), version: version, createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0))
    }

    /// Builds an item's answer as the route does, counting the builds.
    final class Builder: @unchecked Sendable {
        var builds = 0
        func build(_ item: Item) -> Reply {
            builds += 1
            return ItemsController.itemReply(item)
        }
    }

    @Test("an equal item gets the kept answer; a written one (any field) gets its own, which replaces it")
    func anAnswerIsKeptForAnEqualItemOnly() throws {
        let cache = ItemReplyCache()
        let builder = Builder()
        let mug = Self.item("Mug")
        let first = cache.reply(for: mug, build: builder.build)
        let again = cache.reply(for: mug, build: builder.build)
        #expect(builder.builds == 1)
        #expect(String(buffer: again.body) == String(buffer: first.body))
        #expect(again.headers[.eTag] == "\"1\"")

        var renamed = mug
        renamed.name = "Big Mug"
        renamed.version = 2
        let second = cache.reply(for: renamed, build: builder.build)
        #expect(builder.builds == 2)
        #expect(second.headers[.eTag] == "\"2\"")
        #expect(String(buffer: second.body).contains("Big Mug"))
        // The same version with another field changed (not a state the store makes) is still built anew.
        var restocked = renamed
        restocked.status = .inStock(quantity: 7)
        #expect(String(buffer: cache.reply(for: restocked, build: builder.build).body).contains("7"))
        #expect(builder.builds == 3)
        #expect(cache.count == 1)
    }

    @Test("at most capacity answers are kept; keeping one more empties the cache first")
    func theCacheIsBounded() {
        let cache = ItemReplyCache(capacity: 2)
        let builder = Builder()
        let (a, b, c) = (Self.item("A"), Self.item("B"), Self.item("C"))
        _ = cache.reply(for: a, build: builder.build)
        _ = cache.reply(for: b, build: builder.build)
        #expect(cache.count == 2)
        // A new version of a kept item replaces it in place.
        var b2 = b
        b2.version = 2
        _ = cache.reply(for: b2, build: builder.build)
        #expect(cache.count == 2)
        _ = cache.reply(for: c, build: builder.build)
        #expect(cache.count == 1)
        _ = cache.reply(for: a, build: builder.build)
        #expect(builder.builds == 5)
    }
}
