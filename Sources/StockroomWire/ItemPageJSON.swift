import StockroomCore

/// A page of `GET /v1/items`, `{"items":[Item],"next":PageCursor|null}`: the server writes it, the SDK
/// decodes it (`StockroomClient.ItemPage`).
public struct ItemPageJSON: JSONWritable, Hashable, Sendable, Decodable {
    /// The page's items, in creation order.
    public let items: [Item]
    /// Where the next page starts; nil on the last page.
    public let next: PageCursor?

    public init(items: [Item], next: PageCursor?) {
        self.items = items
        self.next = next
    }

    public func write(to json: inout JSONWriter) {
        json.raw(#"{"items":["#)
        for (index, item) in items.enumerated() {
            if index > 0 { json.raw(",") }
            item.write(to: &json)
        }
        json.raw(#"],"next":"#)
        json.text(next?.encoded)
        json.raw("}")
    }
}
