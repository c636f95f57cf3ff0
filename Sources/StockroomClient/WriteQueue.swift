import Foundation
import GRDB

/// What a queued write does: a command of this device's navigation, or a write of an item.
public enum Write: Hashable, Sendable {
    /// A navigation command (`POST /v1/clients/{clientID}/commands`).
    case command(Command)
    /// A new item with the id the app chose (`POST /v1/items`).
    case createItem(id: ItemID, draft: Draft)
    /// The item's fields replaced, only if it is at `ifVersion` when one is given (`PUT /v1/items/{id}`).
    case updateItem(id: ItemID, draft: Draft, ifVersion: Int?)
    /// The item deleted, only if it is at `ifVersion` when one is given (`DELETE /v1/items/{id}`).
    case deleteItem(id: ItemID, ifVersion: Int?)

    /// A short name for logs and screens: the command's (`save`), else `createItem`, `updateItem` or `deleteItem`.
    public var name: String {
        switch self {
        case .command(let command): command.name
        case .createItem: "createItem"
        case .updateItem: "updateItem"
        case .deleteItem: "deleteItem"
        }
    }

    /// The command, when this is one.
    public var command: Command? {
        if case .command(let command) = self { return command }
        return nil
    }

    /// The item an item write writes; nil for a command.
    public var itemID: ItemID? {
        switch self {
        case .command: nil
        case .createItem(let id, _), .updateItem(let id, _, _), .deleteItem(let id, _): id
        }
    }

    /// The fields an item write sends, never lost when the server refuses it; nil for a delete or a command.
    public var draft: Draft? {
        switch self {
        case .createItem(_, let draft), .updateItem(_, let draft, _): draft
        case .command, .deleteItem: nil
        }
    }
}

/// A write waiting to be delivered, with the idempotency key every attempt sends.
public struct QueuedWrite: Hashable, Sendable, Identifiable {
    /// The write's place in the queue; delivery follows it.
    public var id: Int64
    /// The device that queued it (a command's device).
    public var clientID: ClientID
    /// What it does.
    public var write: Write
    /// Sent with every attempt, so that the server applies the write once however often it arrives.
    public var idempotencyKey: String
    /// When the app queued it.
    public var enqueuedAt: Date
    /// How many attempts got no answer.
    public var attempts: Int

    /// The command, when the write is one.
    public var command: Command? { write.command }
}

/// The offline queue: writes (navigation commands and item writes) kept in a local SQLite file
/// (GRDB) until the server has answered them, in the order they were queued, each with its
/// idempotency key.
///
/// It survives the app being killed: a queue opened on the same file holds what was not yet
/// answered. The queue only stores; ``SyncedStore`` delivers.
public struct WriteQueue: Sendable {
    private let database: DatabaseQueue

    /// Opens (and creates, with its folder) the queue at `path`.
    public init(path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        // WAL with synchronous NORMAL: a commit is durable across the app being killed (the OS has it)
        // without an fsync per keystroke of an offline draft.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        try self.init(database: DatabaseQueue(path: path, configuration: configuration))
    }

    /// A queue in memory only, gone with the process (for previews and tests).
    public static func inMemory() throws -> WriteQueue {
        try WriteQueue(database: DatabaseQueue())
    }

    private init(database: DatabaseQueue) throws {
        self.database = database
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "queuedCommand") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("clientID", .text).notNull().indexed()
                t.column("command", .text).notNull()
                t.column("idempotencyKey", .text).notNull().unique()
                t.column("enqueuedAt", .double).notNull()
                t.column("attempts", .integer).notNull().defaults(to: 0)
            }
        }
        // Item writes join commands: one table in one order, each row a kind and its JSON. A queue
        // file of an earlier version keeps its commands, their ids and their order.
        migrator.registerMigration("v2-writes") { db in
            try db.create(table: "queuedWrite") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("clientID", .text).notNull().indexed()
                t.column("kind", .text).notNull()
                t.column("payload", .text).notNull()
                t.column("idempotencyKey", .text).notNull().unique()
                t.column("enqueuedAt", .double).notNull()
                t.column("attempts", .integer).notNull().defaults(to: 0)
            }
            try db.execute(
                sql: """
                    INSERT INTO queuedWrite (id, clientID, kind, payload, idempotencyKey, enqueuedAt, attempts)
                    SELECT id, clientID, 'command', command, idempotencyKey, enqueuedAt, attempts FROM queuedCommand ORDER BY id
                    """)
            try db.drop(table: "queuedCommand")
        }
        try migrator.migrate(database)
    }

    /// Appends `write` for `clientID` with a fresh idempotency key; it is durable when this returns.
    @discardableResult
    public func enqueue(_ write: Write, for clientID: ClientID, idempotencyKey: String = StockroomClient.newIdempotencyKey())
        throws -> QueuedWrite
    {
        let (kind, payload) = try Stored.encode(write)
        let now = Date()
        let id = try database.write { db in
            try db.execute(
                sql: "INSERT INTO queuedWrite (clientID, kind, payload, idempotencyKey, enqueuedAt) VALUES (?, ?, ?, ?, ?)",
                arguments: [clientID.rawValue, kind, payload, idempotencyKey, now.timeIntervalSince1970])
            return db.lastInsertedRowID
        }
        return QueuedWrite(id: id, clientID: clientID, write: write, idempotencyKey: idempotencyKey, enqueuedAt: now, attempts: 0)
    }

    /// The writes waiting for `clientID`, oldest first.
    public func pending(for clientID: ClientID) throws -> [QueuedWrite] {
        try database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM queuedWrite WHERE clientID = ? ORDER BY id", arguments: [clientID.rawValue]
            ).map { row in
                QueuedWrite(
                    id: row["id"], clientID: ClientID(stored: row["clientID"]), write: try Stored.decode(kind: row["kind"], payload: row["payload"]),
                    idempotencyKey: row["idempotencyKey"], enqueuedAt: Date(timeIntervalSince1970: row["enqueuedAt"]), attempts: row["attempts"])
            }
        }
    }

    /// Removes a write the server has answered (applied or refused).
    public func remove(_ id: QueuedWrite.ID) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM queuedWrite WHERE id = ?", arguments: [id])
        }
    }

    /// Counts an attempt that got no answer.
    public func recordAttempt(_ id: QueuedWrite.ID) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE queuedWrite SET attempts = attempts + 1 WHERE id = ?", arguments: [id])
        }
    }

    /// A row's kind and JSON: a command as the wire writes it, an item write as `ItemWrite`.
    private enum Stored {
        struct ItemWrite: Codable {
            var id: ItemID
            var draft: Draft?
            var ifVersion: Int?
        }

        struct UnknownKind: Error, CustomStringConvertible {
            let kind: String
            var description: String { "a queued write of unknown kind \(kind) (a queue file written by a newer SDK?)" }
        }

        static func encode(_ write: Write) throws -> (kind: String, payload: String) {
            let encoder = JSONCoding.encoder()
            let (kind, data): (String, Data) =
                switch write {
                case .command(let command): ("command", try encoder.encode(command))
                case .createItem(let id, let draft): ("createItem", try encoder.encode(ItemWrite(id: id, draft: draft)))
                case .updateItem(let id, let draft, let ifVersion):
                    ("updateItem", try encoder.encode(ItemWrite(id: id, draft: draft, ifVersion: ifVersion)))
                case .deleteItem(let id, let ifVersion): ("deleteItem", try encoder.encode(ItemWrite(id: id, ifVersion: ifVersion)))
                }
            return (kind, String(decoding: data, as: UTF8.self))
        }

        static func decode(kind: String, payload: String) throws -> Write {
            let decoder = JSONCoding.decoder()
            let data = Data(payload.utf8)
            if kind == "command" { return .command(try decoder.decode(Command.self, from: data)) }
            // The kind first: a row of a kind this SDK does not know (a queue file a newer SDK wrote)
            // says so, not that its payload lacks a field.
            guard ["createItem", "updateItem", "deleteItem"].contains(kind) else { throw UnknownKind(kind: kind) }
            let item = try decoder.decode(ItemWrite.self, from: data)
            switch (kind, item.draft) {
            case ("createItem", let draft?): return .createItem(id: item.id, draft: draft)
            case ("updateItem", let draft?): return .updateItem(id: item.id, draft: draft, ifVersion: item.ifVersion)
            case ("deleteItem", _): return .deleteItem(id: item.id, ifVersion: item.ifVersion)
            default: throw UnknownKind(kind: kind)
            }
        }
    }
}
