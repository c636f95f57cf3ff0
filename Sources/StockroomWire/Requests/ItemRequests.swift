import StockroomCore

/// `POST /v1/items`'s body, one item of `POST /v1/items/batch`: a draft's fields, and the item's
/// id when the client chooses it (`{"id"?, "name", "color", "status"}`).
public struct NewItemBody: Hashable, Sendable, Codable {
    /// The id the client chose; nil lets the server choose.
    public var id: ItemID?
    /// The item's fields.
    public var draft: Draft

    public init(id: ItemID? = nil, draft: Draft) {
        self.id = id
        self.draft = draft
    }

    private enum CodingKeys: String, CodingKey { case id }

    public init(from decoder: any Decoder) throws {
        id = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(ItemID.self, forKey: .id)
        draft = try Draft(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try draft.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(id, forKey: .id)
    }
}

/// `POST /v1/items/batch`'s body: `{"items": [NewItemBody]}`.
public struct NewItemsBody: Hashable, Sendable, Codable {
    public var items: [NewItemBody]

    public init(items: [NewItemBody]) {
        self.items = items
    }
}

/// `POST /v1/items/batch`'s answer, one result per item in order:
/// `{"results": [{"status", "item": Item|null, "error": {"code", "message", "field"}|null}]}`.
public struct BatchResultsJSON: JSONWritable, Hashable, Sendable, Decodable {
    /// One item's result.
    public struct Result: Hashable, Sendable, Codable {
        /// 201 for a created item, else the status a single create would have answered.
        public var status: Int
        /// The created item.
        public var item: Item?
        /// Why the item was refused.
        public var error: ErrorBody.Object?

        /// A created item.
        public static func created(_ item: Item) -> Result { Result(status: 201, item: item, error: nil) }

        /// A refused item, with the status and error a single create would have answered.
        public static func refused(status: Int, _ error: ErrorBody.Object) -> Result { Result(status: status, item: nil, error: error) }

        private enum CodingKeys: String, CodingKey { case status, item, error }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(status, forKey: .status)
            try c.encodeNullable(item, forKey: .item)
            try c.encodeNullable(error, forKey: .error)
        }
    }

    public var results: [Result]

    public init(results: [Result]) {
        self.results = results
    }

    public func write(to json: inout JSONWriter) {
        json.raw(#"{"results":["#)
        for (index, result) in results.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw(#"{"status":"#)
            json.int(result.status)
            json.raw(#","item":"#)
            if let item = result.item { item.write(to: &json) } else { json.raw("null") }
            json.raw(#","error":"#)
            if let error = result.error {
                ErrorJSON.writeObject(code: error.code, message: error.message, field: error.field, current: error.current, to: &json)
            } else {
                json.raw("null")
            }
            json.raw("}")
        }
        json.raw("]}")
    }
}
