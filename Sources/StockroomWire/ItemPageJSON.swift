import StockroomCore

/// A page of `GET /v1/items`, `{"items":[Item],"next":PageCursor|null}`.
public struct ItemPageJSON: JSONWritable {
    public let items: [Item]
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
