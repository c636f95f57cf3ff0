import Foundation
import GRDB
import StockroomCore
import StockroomWire
import Testing
// The shared test helpers (`Failure`, `eventually`), for every file of this target.
@_exported import TestSupport

import StockroomStorage
@testable import StockroomStore

// MARK: - Fixtures shared by the StockroomStore tests

// MARK: - Temporary database files

/// A fresh, empty folder under the temporary directory, removed when `body` returns or throws.
func withTemporaryFolder<T>(_ body: (URL) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory
        .appendingPathComponent("stockroom-store-tests-\(UUID().uuidString)", isDirectory: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(folder)
}

/// A database in `folder` (created) that gives `traced` the SQL of every statement it runs, on the
/// writer and on the readers.
func openTracedDatabase(in folder: URL, _ traced: @escaping @Sendable (String) -> Void) throws -> AppDatabase {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return try AppDatabase.open(
        path: folder.appendingPathComponent("stockroom.sqlite").path,
        eachConnection: { db in
            db.trace(options: .statement) { event in
                if case .statement(let statement) = event { traced(statement.sql) }
            }
        })
}

/// A database on a fresh SQLite file of its own (WAL, real disk), removed afterwards.
func withTemporaryDatabase<T>(
    synchronous: AppDatabase.Synchronous = .full, writesInFlight: WritesInFlight = WritesInFlight(),
    _ body: (AppDatabase) async throws -> T
) async throws -> T {
    try await withTemporaryFolder { folder in
        let database = try AppDatabase.open(
            path: folder.appendingPathComponent("stockroom.sqlite").path, synchronous: synchronous,
            writesInFlight: writesInFlight)
        return try await body(database)
    }
}

// MARK: - Reading the store behind its back

/// One row of the `changes` table, with its JSON value decoded; `at` kept apart.
struct LoggedChange: Hashable, Sendable, CustomStringConvertible {
    var seq: Int64
    var entity: String
    var op: String
    var entityID: String
    var owner: String?
    var value: LoggedValue?
    var originClientID: String?
    var originIdempotencyKey: String?

    static func itemUpsert(_ seq: Int64, _ item: Item, _ origin: Origin) -> LoggedChange {
        LoggedChange(
            seq: seq, entity: "item", op: "upsert", entityID: item.id.description, owner: nil, value: .item(item),
            originClientID: origin.clientID?.rawValue, originIdempotencyKey: origin.idempotencyKey)
    }

    static func itemDelete(_ seq: Int64, _ id: ItemID, _ origin: Origin) -> LoggedChange {
        LoggedChange(
            seq: seq, entity: "item", op: "delete", entityID: id.description, owner: nil, value: nil,
            originClientID: origin.clientID?.rawValue, originIdempotencyKey: origin.idempotencyKey)
    }

    static func navigationUpsert(_ seq: Int64, _ navigation: Navigation, owner: String, _ origin: Origin) -> LoggedChange {
        LoggedChange(
            seq: seq, entity: "navigation", op: "upsert", entityID: navigation.clientID.rawValue, owner: owner, value: .navigation(navigation),
            originClientID: origin.clientID?.rawValue, originIdempotencyKey: origin.idempotencyKey)
    }

    /// The same entry without its seq, for comparing entries whose relative order the contract leaves open.
    var unsequenced: LoggedChange {
        var copy = self
        copy.seq = 0
        return copy
    }

    var description: String {
        "#\(seq) \(entity).\(op) \(entityID) owner=\(owner ?? "nil") origin=(\(originClientID ?? "nil"), \(originIdempotencyKey ?? "nil")) value=\(value.map { "\($0)" } ?? "nil")"
    }
}

enum LoggedValue: Hashable, Sendable {
    case item(Item)
    case navigation(Navigation)
}

/// Raw SQL access to a store's tables, for asserting what was (not) written.
struct Probe {
    let database: AppDatabase

    init(_ database: AppDatabase) { self.database = database }

    /// The change log past `seq`, in seq order.
    func changes(after seq: Int64 = 0) async throws -> [LoggedChange] {
        let rows = try await database.writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM changes WHERE seq > ? ORDER BY seq", arguments: [seq]).map(PlainRow.init)
        }
        return try rows.map { row in
            let entity: String = row["entity"] ?? "?"
            let json: String? = row["value"]
            var value: LoggedValue?
            if let json {
                let data = Data(json.utf8)
                switch entity {
                case "item": value = .item(try JSONCoding.decoder().decode(Item.self, from: data))
                case "navigation": value = .navigation(try JSONCoding.decoder().decode(Navigation.self, from: data))
                default: Issue.record("unknown entity \(entity)")
                }
            }
            return LoggedChange(
                seq: row["seq"] ?? -1, entity: entity, op: row["op"] ?? "?", entityID: row["entity_id"] ?? "?", owner: row["owner"], value: value,
                originClientID: row["origin_client_id"], originIdempotencyKey: row["origin_idempotency_key"])
        }
    }

    /// The raw `value` and `at` columns of one entry.
    func rawChange(seq: Int64) async throws -> (value: String?, at: Int64)? {
        try await database.writer.read { db in
            try Row.fetchOne(db, sql: "SELECT value, at FROM changes WHERE seq = ?", arguments: [seq])
                .map { (value: $0["value"] as String?, at: $0["at"] as Int64) }
        }
    }

    func changeCount() async throws -> Int {
        try await count("changes")
    }

    func changeSeqs() async throws -> [Int64] {
        try await database.writer.read { db in try Int64.fetchAll(db, sql: "SELECT seq FROM changes ORDER BY seq") }
    }

    func head() async throws -> Int64 {
        try await database.writer.read { db in try Int64.fetchOne(db, sql: "SELECT max(seq) FROM changes") ?? 0 }
    }

    func count(_ table: String) async throws -> Int {
        try await database.writer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? -1 }
    }

    /// Every row of `items`, tombstones included, in creation order.
    func itemRows() async throws -> [PlainRow] {
        try await rows("SELECT * FROM items ORDER BY seq")
    }

    /// The rows of a query, copied out of the connection.
    func rows(_ sql: String) async throws -> [PlainRow] {
        try await database.writer.read { db in try Row.fetchAll(db, sql: sql).map(PlainRow.init) }
    }

    func clientIDs() async throws -> [String] {
        try await database.writer.read { db in try String.fetchAll(db, sql: "SELECT client_id FROM clients ORDER BY client_id") }
    }

    /// Everything a failed write must leave untouched, as one comparable value.
    func snapshot() async throws -> Snapshot {
        try await database.writer.read { db in
            func rows(_ sql: String) throws -> [PlainRow] { try Row.fetchAll(db, sql: sql).map(PlainRow.init) }
            return Snapshot(
                items: try rows("SELECT * FROM items ORDER BY seq"),
                clients: try rows("SELECT * FROM clients ORDER BY client_id"),
                refs: try rows("SELECT * FROM client_item_refs ORDER BY item_id, client_id"),
                changes: try rows("SELECT * FROM changes ORDER BY seq"),
                idempotency: try rows("SELECT * FROM idempotency_records ORDER BY user, scope, key"),
                head: try ChangeLog.head(db)
            )
        }
    }
}

/// The whole content of the tables a write touches.
struct Snapshot: Hashable, Sendable {
    var items: [PlainRow]
    var clients: [PlainRow]
    var refs: [PlainRow]
    var changes: [PlainRow]
    var idempotency: [PlainRow]
    var head: Int64
}

/// A database row copied into a sendable value (GRDB's `Row` is not `Sendable`).
struct PlainRow: Hashable, Sendable, CustomStringConvertible {
    var values: [String: DatabaseValue]

    init(values: [String: DatabaseValue]) { self.values = values }

    init(_ row: Row) {
        values = Dictionary(row.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
    }

    /// The column's value converted to `T`; nil when absent or NULL.
    subscript<T: DatabaseValueConvertible>(_ column: String) -> T? {
        values[column].flatMap { T.fromDatabaseValue($0) }
    }

    var description: String { values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
}

extension NavigationState {
    func with(_ change: (inout NavigationState) -> Void) -> NavigationState {
        var copy = self
        change(&copy)
        return copy
    }
}
