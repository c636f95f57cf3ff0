/// A whole store as stored, table by table, for copying it from one backend into another
/// (`stockroom migrate --from-sqlite`): items with their seqs, versions and tombstones, tokens'
/// hashes, the change log's entries byte for byte, navigation, item references and idempotency
/// records. Each table's columns are listed here once, in the order both sides use.
public enum CopiedTable: String, Sendable, CaseIterable {
    case items
    case tokens
    case changes
    case clients
    case clientItemRefs = "client_item_refs"
    case idempotencyRecords = "idempotency_records"

    /// A column's name and kind.
    public struct Column: Sendable {
        public var name: String
        public var kind: Kind
    }

    /// How a column's values are stored: SQLite keeps booleans as integers 0 and 1.
    public enum Kind: Sendable {
        case integer, real, text, blob, boolean
    }

    /// The columns, in order.
    public var columns: [Column] {
        switch self {
        case .items:
            [.init(name: "seq", kind: .integer), .init(name: "id", kind: .text), .init(name: "name", kind: .text),
             .init(name: "search_name", kind: .text), .init(name: "color_name", kind: .text), .init(name: "color_red", kind: .real),
             .init(name: "color_green", kind: .real), .init(name: "color_blue", kind: .real), .init(name: "in_stock", kind: .boolean),
             .init(name: "quantity", kind: .integer), .init(name: "is_on_back_order", kind: .boolean), .init(name: "version", kind: .integer),
             .init(name: "created_at", kind: .integer), .init(name: "updated_at", kind: .integer), .init(name: "deleted_at", kind: .integer)]
        case .tokens:
            [.init(name: "id", kind: .text), .init(name: "user", kind: .text), .init(name: "role", kind: .text),
             .init(name: "secret_hash", kind: .blob), .init(name: "created_at", kind: .integer), .init(name: "revoked_at", kind: .integer)]
        case .changes:
            [.init(name: "seq", kind: .integer), .init(name: "entity", kind: .text), .init(name: "op", kind: .text),
             .init(name: "entity_id", kind: .text), .init(name: "owner", kind: .text), .init(name: "value", kind: .text),
             .init(name: "origin_client_id", kind: .text), .init(name: "origin_idempotency_key", kind: .text), .init(name: "at", kind: .integer),
             .init(name: "previous", kind: .text)]
        case .clients:
            [.init(name: "client_id", kind: .text), .init(name: "owner", kind: .text), .init(name: "state", kind: .text),
             .init(name: "version", kind: .integer), .init(name: "updated_at", kind: .integer), .init(name: "owner_change_seq", kind: .integer)]
        case .clientItemRefs:
            [.init(name: "item_id", kind: .text), .init(name: "client_id", kind: .text)]
        case .idempotencyRecords:
            [.init(name: "user", kind: .text), .init(name: "scope", kind: .text), .init(name: "key", kind: .text),
             .init(name: "fingerprint", kind: .text), .init(name: "response", kind: .blob), .init(name: "created_at", kind: .integer)]
        }
    }

    /// How many leading columns make a row's key (rows are copied in key order).
    public var keyColumns: Int {
        switch self {
        case .items, .tokens, .changes, .clients: 1
        case .clientItemRefs: 2
        case .idempotencyRecords: 3
        }
    }
}

/// One stored value.
public enum CopiedValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case boolean(Bool)
}

/// Where the copied store's log stands.
public struct CopiedPosition: Sendable, Hashable {
    public var epoch: String
    /// The last seq the log handed out (trimmed or not).
    public var head: Int64
    public var trimmedThrough: Int64
    public var tokenGeneration: Int64
    /// The form of the log's values (`change_value_format`): both sides must read the same.
    public var changeValueFormat: String

    public init(epoch: String, head: Int64, trimmedThrough: Int64, tokenGeneration: Int64, changeValueFormat: String) {
        self.epoch = epoch
        self.head = head
        self.trimmedThrough = trimmedThrough
        self.tokenGeneration = tokenGeneration
        self.changeValueFormat = changeValueFormat
    }
}

/// A store that can be read whole, from one consistent snapshot.
public protocol StoreCopySource: Sendable {
    /// The log's position in the snapshot.
    func copyPosition() throws -> CopiedPosition
    /// Up to `limit` rows of `table` in key order after the row whose key is `after` (nil: from the
    /// first), each with `table.columns`' values in order.
    func copyRows(_ table: CopiedTable, after: [CopiedValue]?, limit: Int) throws -> [[CopiedValue]]
}
