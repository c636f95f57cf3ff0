import Foundation
import Hummingbird
import StockroomCore
import StockroomWire
import StockroomStorage

/// `/v1/items`: list, get, create, replace and delete inventory items.
struct ItemsController {
    let database: any Storage
    /// The import's byte and row limits.
    let limits: LimitSettings

    func addRoutes(to routes: RouterGroup<CallerContext>) {
        routes.get(use: list)
        routes.get(":id", use: get)
        let writes = routes.group().add(middleware: RequireRole(role: .editor, action: "write items"))
        writes.post(use: create)
        writes.post("batch", use: createBatch)
        writes.post("import", use: importCSV)
        writes.put(":id", use: replace)
        writes.delete(":id", use: delete)
    }

    @Sendable func list(_ request: Request, context: CallerContext) async throws -> Response {
        let rawLimit = try request.intQuery("limit")
        let after = try request.query("after").map { raw in
            guard let cursor = PageCursor(encoded: raw) else { throw APIError.invalidParameter("after", "after is not a valid cursor") }
            return cursor
        }
        let status = try request.query("status").map { raw in
            guard let status = StatusFilter(rawValue: raw) else {
                throw APIError.invalidParameter("status", "status must be inStock or outOfStock")
            }
            return status
        }
        let limit = try APIError.checked("limit", rawLimit, default: 50, in: 1...500)
        let page = try await database.listItems(after: after, limit: limit, query: try request.query("q"), status: status)
        var json = JSONWriter(capacity: 64 + page.items.count * 256)
        ItemPageJSON(items: page.items, next: page.next).write(to: &json)
        return json.reply().response
    }

    @Sendable func createBatch(_ request: Request, context: CallerContext) async throws -> Response {
        let user = context.caller.user
        let body = try await request.decodeJSON(NewItemsBody.self, context: context)
        guard (1...BatchItem.maximumCount).contains(body.value.items.count) else {
            throw APIError.validationFailed("items", "items must hold 1-\(BatchItem.maximumCount) items")
        }
        let idempotency = try request.idempotency(user: user, scope: .items, body: body.bytes, render: Self.batchReply)
        let origin = Origin(user: user, idempotencyKey: idempotency?.key.key)
        let items = body.value.items.map { BatchItem(id: $0.id, draft: $0.draft) }
        switch try await database.createItems(items, origin: origin, idempotency: idempotency) {
        case .fresh(let outcomes): return Self.batchReply(outcomes).response
        case .replayed(let stored): return try Reply(replaying: stored).response
        }
    }

    @Sendable static func batchReply(_ outcomes: [ItemCreation]) -> Reply {
        var json = JSONWriter(capacity: 64 + outcomes.count * 300)
        BatchResultsJSON(results: outcomes.map { outcome in
            switch outcome {
            case .created(let item): .created(item)
            case .refused(let error): APIError(store: error).batchResult
            }
        }).write(to: &json)
        return json.reply()
    }

    @Sendable func get(_ request: Request, context: CallerContext) async throws -> Response {
        let held = try request.ifNoneMatch()
        let id = try Self.itemID(context)
        return try Self.getAnswer(try await database.item(id), id: id, held: held)
    }

    /// GET's answer: the item, `304` with its `ETag` when `held` (the request's `If-None-Match`)
    /// names its version, or `404`. An item's body is a function of its version, so a client that
    /// holds that version holds the body. Out of line, so that its temporaries stay out of `get`'s
    /// async frame, which every GET allocates.
    @inline(never)
    private static func getAnswer(_ item: Item?, id: ItemID, held: VersionPrecondition?) throws -> Response {
        guard let item else { throw APIError.notFound("no item \(id)") }
        if let held, held.matches(item.version) {
            return Response(status: .notModified, headers: [.eTag: Reply.etag(item.version)])
        }
        return itemReply(item).response
    }

    @Sendable func create(_ request: Request, context: CallerContext) async throws -> Response {
        let user = context.caller.user
        let body = try await request.decodeJSON(NewItemBody.self, context: context)
        let idempotency = try request.idempotency(user: user, scope: .items, body: body.bytes, render: Self.createdReply)
        let origin = Origin(user: user, idempotencyKey: idempotency?.key.key)
        switch try await database.createItem(id: body.value.id, draft: body.value.draft, origin: origin, idempotency: idempotency) {
        case .fresh(let item): return Self.createdReply(item).response
        case .replayed(let stored): return try Reply(replaying: stored).response
        }
    }

    @Sendable func replace(_ request: Request, context: CallerContext) async throws -> Response {
        let user = context.caller.user
        let body = try await request.decodeJSON(Draft.self, context: context)
        let idempotency = try request.idempotency(user: user, scope: .items, body: body.bytes, render: Self.itemReply)
        let precondition = try request.versionPrecondition()
        let id = try Self.itemID(context)
        let origin = Origin(user: user, idempotencyKey: idempotency?.key.key)
        switch try await database.updateItem(
            id, draft: body.value, precondition: precondition, origin: origin, idempotency: idempotency)
        {
        case .fresh(let item): return Self.itemReply(item).response
        case .replayed(let stored): return try Reply(replaying: stored).response
        }
    }

    @Sendable func delete(_ request: Request, context: CallerContext) async throws -> Response {
        let user = context.caller.user
        let idempotency = try request.idempotency(user: user, scope: .items, body: Data()) { (_: Void) in Reply.empty() }
        let precondition = try request.versionPrecondition()
        let id = try Self.itemID(context)
        let origin = Origin(user: user, idempotencyKey: idempotency?.key.key)
        switch try await database.deleteItem(id, precondition: precondition, origin: origin, idempotency: idempotency) {
        case .fresh: return Reply.empty().response
        case .replayed(let stored): return try Reply(replaying: stored).response
        }
    }

    /// The item id of the path; a malformed one names no item (404), quoted up to 64 characters.
    static func itemID(_ context: CallerContext) throws -> ItemID {
        let raw = context.parameters.get("id") ?? ""
        guard let id = ItemID(raw) else {
            throw APIError.notFound("no item \(APIError.quoted(raw))")
        }
        return id
    }

    @Sendable static func itemReply(_ item: Item) -> Reply {
        Reply.json(writing: item, headers: [.eTag: Reply.etag(item.version)])
    }

    @Sendable static func createdReply(_ item: Item) -> Reply {
        Reply.json(writing: item, status: .created, headers: [.eTag: Reply.etag(item.version), .location: "/v1/items/\(item.id)"])
    }
}
