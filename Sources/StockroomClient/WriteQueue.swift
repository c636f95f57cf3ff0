import Foundation
import GRDB

/// A command waiting to be delivered, with the idempotency key every attempt sends.
public struct QueuedCommand: Hashable, Sendable, Identifiable {
    /// The command's place in the queue; delivery follows it.
    public var id: Int64
    /// The device the command is for.
    public var clientID: ClientID
    /// The command.
    public var command: Command
    /// Sent with every attempt, so that the server applies the command once however often it arrives.
    public var idempotencyKey: String
    /// When the app sent it.
    public var enqueuedAt: Date
    /// How many attempts got no answer.
    public var attempts: Int
}

/// The offline command queue: commands kept in a local SQLite file (GRDB) until the server has
/// answered them, in the order they were sent, each with its idempotency key.
///
/// It survives the app being killed: a queue opened on the same file holds what was not yet
/// answered. The queue only stores; ``SyncedStore`` delivers.
public struct CommandQueue: Sendable {
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
    public static func inMemory() throws -> CommandQueue {
        try CommandQueue(database: DatabaseQueue())
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
        try migrator.migrate(database)
    }

    /// Appends `command` for `clientID` with a fresh idempotency key; it is durable when this returns.
    @discardableResult
    public func enqueue(_ command: Command, for clientID: ClientID, idempotencyKey: String = StockroomClient.newIdempotencyKey())
        throws -> QueuedCommand
    {
        let json = String(decoding: try JSONCoding.encoder().encode(command), as: UTF8.self)
        let now = Date()
        let id = try database.write { db in
            try db.execute(
                sql: "INSERT INTO queuedCommand (clientID, command, idempotencyKey, enqueuedAt) VALUES (?, ?, ?, ?)",
                arguments: [clientID.rawValue, json, idempotencyKey, now.timeIntervalSince1970])
            return db.lastInsertedRowID
        }
        return QueuedCommand(id: id, clientID: clientID, command: command, idempotencyKey: idempotencyKey, enqueuedAt: now, attempts: 0)
    }

    /// The commands waiting for `clientID`, oldest first.
    public func pending(for clientID: ClientID) throws -> [QueuedCommand] {
        try database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM queuedCommand WHERE clientID = ? ORDER BY id", arguments: [clientID.rawValue]
            ).map { row in
                let text: String = row["command"]
                return QueuedCommand(
                    id: row["id"], clientID: ClientID(stored: row["clientID"]),
                    command: try JSONCoding.decoder().decode(Command.self, from: Data(text.utf8)),
                    idempotencyKey: row["idempotencyKey"],
                    enqueuedAt: Date(timeIntervalSince1970: row["enqueuedAt"]), attempts: row["attempts"])
            }
        }
    }

    /// Removes a command the server has answered (applied or refused).
    public func remove(_ id: QueuedCommand.ID) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM queuedCommand WHERE id = ?", arguments: [id])
        }
    }

    /// Counts an attempt that got no answer.
    public func recordAttempt(_ id: QueuedCommand.ID) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE queuedCommand SET attempts = attempts + 1 WHERE id = ?", arguments: [id])
        }
    }
}
