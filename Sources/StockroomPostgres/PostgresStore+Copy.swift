import Foundation
import Logging
import NIOCore
import PostgresNIO
import StockroomStorage

/// What a copy into PostgreSQL wrote.
public struct PostgresCopySummary: Sendable {
    /// Rows copied, by table.
    public var rows: [CopiedTable: Int]
    /// The database's epoch now: the source's, or a new one.
    public var epoch: String
    /// The log's head now, the source's.
    public var head: Int64
}

extension PostgresStore {
    /// Copies a whole store (`source`, one consistent snapshot) into the empty PostgreSQL database
    /// at `url`, in one transaction: every table with COPY, keeping ids, versions, seqs, token
    /// hashes and the log's bytes; then the log's head, trim watermark and token generation, and the
    /// source's epoch (so that clients' cursors stay valid) unless `newEpoch`. A database that
    /// holds items, tokens, navigation or log entries already is refused, and nothing is written.
    public static func importCopy(
        from source: any StoreCopySource, into url: PostgresURL, newEpoch: Bool, batchSize: Int = 5_000,
        logger: Logger = Logger(label: "stockroom.postgres")
    ) async throws -> PostgresCopySummary {
        let position = try source.copyPosition()
        guard position.changeValueFormat == changeValueFormat else {
            throw PostgresStoreError.copy(
                "the SQLite database's change log is in form \(position.changeValueFormat) and PostgreSQL's in form \(changeValueFormat): migrate it with this stockroom first")
        }
        let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 0, logger: logger)
        defer { Task { try? await connection.close() } }
        try await PostgresMigrator.migrate(connection, logger: logger)
        return try await transaction(on: connection, logger: logger) { connection in
            // Daemons running on the database wait for the copy to commit or roll back.
            try await connection.query(
                "LOCK TABLE log_head, items, tokens, changes, clients, client_item_refs, idempotency_records IN EXCLUSIVE MODE",
                logger: logger)
            let counts = try await connection.query(
                """
                SELECT (SELECT count(*) FROM items), (SELECT count(*) FROM tokens), (SELECT count(*) FROM clients),
                       (SELECT count(*) FROM changes), (SELECT seq FROM log_head WHERE id = 1)
                """, logger: logger
            ).collect()
            let (items, tokens, clients, changes, head) = try counts[0].decode((Int64, Int64, Int64, Int64, Int64).self)
            guard items == 0, tokens == 0, clients == 0, changes == 0, head == 0 else {
                throw PostgresStoreError.copy(
                    "the PostgreSQL database is not empty (\(items) items, \(tokens) tokens, \(clients) clients, log head \(head)): copy into a new database")
            }
            var copied: [CopiedTable: Int] = [:]
            for table in CopiedTable.allCases {
                copied[table] = try await copy(table, from: source, to: connection, batchSize: batchSize, logger: logger)
            }
            let kept: String? = newEpoch ? nil : position.epoch
            let epoch = try await connection.query(
                """
                UPDATE meta SET value = coalesce(\(kept)::text, replace(gen_random_uuid()::text, '-', '')) WHERE key = 'epoch'
                RETURNING value
                """, logger: logger
            ).collect().first?.decode(String.self) ?? ""
            try await connection.query(
                """
                UPDATE meta SET value = CASE key WHEN 'trimmed_through' THEN \(String(position.trimmedThrough))
                                                 ELSE \(String(position.tokenGeneration)) END
                WHERE key IN ('trimmed_through', 'token_generation')
                """, logger: logger)
            try await connection.query("UPDATE log_head SET seq = \(position.head) WHERE id = 1", logger: logger)
            // New items take seqs after the copied ones.
            try await connection.query(
                "SELECT setval(pg_get_serial_sequence('items', 'seq'), coalesce(max(seq), 1), max(seq) IS NOT NULL) FROM items",
                logger: logger)
            return PostgresCopySummary(rows: copied, epoch: epoch, head: position.head)
        }
    }

    /// One table, streamed with COPY in pages of `batchSize` rows from the source.
    private static func copy(
        _ table: CopiedTable, from source: any StoreCopySource, to connection: PostgresConnection, batchSize: Int, logger: Logger
    ) async throws -> Int {
        let columns = table.columns.map { $0.name == "user" ? "user_id" : $0.name }
        var total = 0
        try await connection.copyFrom(table: table.rawValue, columns: columns, logger: logger) { writer in
            var after: [CopiedValue]?
            while true {
                let rows = try source.copyRows(table, after: after, limit: batchSize)
                guard let last = rows.last else { return }
                var buffer = ByteBuffer()
                for row in rows { CopyText.append(row, to: &buffer) }
                try await writer.write(buffer)
                total += rows.count
                after = Array(last.prefix(table.keyColumns))
            }
        }
        return total
    }
}

/// COPY's text format: one line per row, columns separated by tabs, `\N` for NULL, backslash,
/// newline, carriage return and tab escaped; a bytea as `\x` and hex.
enum CopyText {
    static func append(_ row: [CopiedValue], to buffer: inout ByteBuffer) {
        for (index, value) in row.enumerated() {
            if index > 0 { buffer.writeInteger(UInt8(ascii: "\t")) }
            switch value {
            case .null: buffer.writeStaticString("\\N")
            case .integer(let number): buffer.writeString(String(number))
            case .real(let number): buffer.writeString("\(number)")
            case .boolean(let flag): buffer.writeStaticString(flag ? "t" : "f")
            case .text(let text): appendEscaped(text, to: &buffer)
            case .blob(let bytes):
                buffer.writeStaticString("\\\\x")
                let digits = Array("0123456789abcdef".utf8)
                for byte in bytes {
                    buffer.writeInteger(digits[Int(byte >> 4)])
                    buffer.writeInteger(digits[Int(byte & 0x0f)])
                }
            }
        }
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    static func appendEscaped(_ text: String, to buffer: inout ByteBuffer) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\")
            case UInt8(ascii: "\n"): buffer.writeStaticString("\\n")
            case UInt8(ascii: "\r"): buffer.writeStaticString("\\r")
            case UInt8(ascii: "\t"): buffer.writeStaticString("\\t")
            default: buffer.writeInteger(byte)
            }
        }
    }
}
