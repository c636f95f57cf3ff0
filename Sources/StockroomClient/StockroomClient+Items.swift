import Foundation
import NIOHTTP1

extension StockroomClient {
    /// Every item matching the filters, as pages in creation order; each page is one request
    /// (`GET /v1/items`), asked for only when the loop gets to it.
    ///
    /// - Parameters:
    ///   - matching: a case-insensitive substring of the name.
    ///   - inStock: `true` for in-stock items only, `false` for out-of-stock only, nil for both.
    ///   - pageSize: items per page, 1-500.
    public func items(matching: String? = nil, inStock: Bool? = nil, pageSize: Int = 50) -> ItemPages {
        ItemPages(client: self, query: matching, status: inStock.map { $0 ? .inStock : .outOfStock }, pageSize: pageSize)
    }

    /// Every item matching the filters, all pages read.
    public func allItems(matching: String? = nil, inStock: Bool? = nil, pageSize: Int = 500) async throws -> [Item] {
        var all: [Item] = []
        for try await page in items(matching: matching, inStock: inStock, pageSize: pageSize) { all += page }
        return all
    }

    /// One page of items after `cursor` (`GET /v1/items`).
    public func itemPage(after cursor: PageCursor?, matching: String? = nil, status: StatusFilter? = nil, limit: Int = 50) async throws -> ItemPage {
        try await call(
            ItemPage.self, .GET, "/v1/items",
            query: [("limit", "\(limit)"), ("after", cursor?.encoded), ("q", matching), ("status", status?.rawValue)]
        ).value
    }

    /// The item (`GET /v1/items/{id}`).
    public func item(_ id: ItemID) async throws -> Item {
        try await call(Item.self, .GET, "/v1/items/\(id)").value
    }

    /// Creates an item from `draft` (`POST /v1/items`), with `id` if given. The idempotency key makes
    /// a retry after a lost answer safe: the server answers it with the first answer.
    public func createItem(_ draft: Draft, id: ItemID? = nil, idempotencyKey: String = newIdempotencyKey()) async throws -> Item {
        return try await call(
            Item.self, .POST, "/v1/items", json: try Self.encode(NewItemBody(id: id, draft: draft)), headers: [("Idempotency-Key", idempotencyKey)]
        ).value
    }

    /// Writes `draft` into `item` if the server still holds `item.version` (its ETag goes in `If-Match`).
    /// A newer version on the server throws `preconditionFailed` with the server's `currentItem`.
    public func updateItem(_ item: Item, with draft: Draft, idempotencyKey: String = newIdempotencyKey()) async throws -> Item {
        try await updateItem(item.id, with: draft, ifVersion: item.version, idempotencyKey: idempotencyKey)
    }

    /// Writes `draft` into the item (`PUT /v1/items/{id}`), only if it is at `ifVersion` when one is given.
    public func updateItem(_ id: ItemID, with draft: Draft, ifVersion: Int?, idempotencyKey: String = newIdempotencyKey()) async throws -> Item {
        var headers = [("Idempotency-Key", idempotencyKey)]
        if let ifVersion { headers.append(("If-Match", Self.entityTag(ifVersion))) }
        do {
            return try await call(Item.self, .PUT, "/v1/items/\(id)", json: try Self.encode(draft), headers: headers).value
        } catch var error as StockroomError where error.code == .preconditionFailed {
            error.currentItem = try? await item(id)
            throw error
        }
    }

    /// Deletes `item` if the server still holds `item.version`.
    public func deleteItem(_ item: Item, idempotencyKey: String = newIdempotencyKey()) async throws {
        try await deleteItem(item.id, ifVersion: item.version, idempotencyKey: idempotencyKey)
    }

    /// Deletes the item (`DELETE /v1/items/{id}`), only if it is at `ifVersion` when one is given.
    public func deleteItem(_ id: ItemID, ifVersion: Int?, idempotencyKey: String = newIdempotencyKey()) async throws {
        var headers = [("Idempotency-Key", idempotencyKey)]
        if let ifVersion { headers.append(("If-Match", Self.entityTag(ifVersion))) }
        let answer = try await send(.DELETE, "/v1/items/\(id)", headers: headers)
        do {
            try Self.check(answer)
        } catch var error as StockroomError where error.code == .preconditionFailed {
            error.currentItem = try? await item(id)
            throw error
        }
    }
}

/// One page of `GET /v1/items`, as the server writes it (`items` in creation order; `next` nil on the last page).
public typealias ItemPage = ItemPageJSON

/// The pages of an item listing; each page is fetched when the loop asks for it.
public struct ItemPages: AsyncSequence, Sendable {
    public typealias Element = [Item]

    let client: StockroomClient
    let query: String?
    let status: StatusFilter?
    let pageSize: Int

    public func makeAsyncIterator() -> Iterator {
        Iterator(pages: self)
    }

    /// Reads one page per `next()`.
    public struct Iterator: AsyncIteratorProtocol {
        let pages: ItemPages
        var cursor: PageCursor?
        var finished = false

        init(pages: ItemPages) { self.pages = pages }

        public mutating func next() async throws -> [Item]? {
            guard !finished else { return nil }
            let page = try await pages.client.itemPage(after: cursor, matching: pages.query, status: pages.status, limit: pages.pageSize)
            cursor = page.next
            finished = page.next == nil
            if page.items.isEmpty && finished { return nil }
            return page.items
        }
    }
}
