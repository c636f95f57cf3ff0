/// The answer of `POST /v1/items/import`: what the import did (or, for a dry run, would do), the
/// rejected rows counted and the first of them listed (at most 1,000, in line order), and the feed
/// cursor after it.
public struct ItemImportSummary: Codable, Hashable, Sendable {
    /// A rejected row: its line (1 = the header), the column at fault (null when the row as a whole
    /// is), the contract's error code and why.
    public struct Reject: Codable, Hashable, Sendable {
        public var line: Int
        public var column: String?
        public var code: String
        public var message: String

        public init(line: Int, column: String?, code: String, message: String) {
            self.line = line
            self.column = column
            self.code = code
            self.message = message
        }

        private enum CodingKeys: String, CodingKey { case line, column, code, message }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(line, forKey: .line)
            try container.encodeNullable(column, forKey: .column)
            try container.encode(code, forKey: .code)
            try container.encode(message, forKey: .message)
        }
    }

    public var dryRun: Bool
    public var inserted: Int
    public var updated: Int
    public var unchanged: Int
    public var rejected: Int
    public var rejects: [Reject]
    /// The feed cursor after the import (before it, when nothing was applied).
    public var cursor: String

    public init(dryRun: Bool, inserted: Int, updated: Int, unchanged: Int, rejected: Int, rejects: [Reject], cursor: String) {
        self.dryRun = dryRun
        self.inserted = inserted
        self.updated = updated
        self.unchanged = unchanged
        self.rejected = rejected
        self.rejects = rejects
        self.cursor = cursor
    }
}

extension ItemImportSummary: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"dryRun":"#)
        json.bool(dryRun)
        json.raw(#","inserted":"#)
        json.int(inserted)
        json.raw(#","updated":"#)
        json.int(updated)
        json.raw(#","unchanged":"#)
        json.int(unchanged)
        json.raw(#","rejected":"#)
        json.int(rejected)
        json.raw(#","rejects":"#)
        json.array(rejects)
        json.raw(#","cursor":"#)
        json.string(cursor)
        json.raw("}")
    }
}

extension ItemImportSummary.Reject: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"line":"#)
        json.int(line)
        json.raw(#","column":"#)
        json.string(column)
        json.raw(#","code":"#)
        json.string(code)
        json.raw(#","message":"#)
        json.string(message)
        json.raw("}")
    }
}
