import Foundation
import GRDB
import Logging
import StockroomStorage
import StockroomWire
import StockroomMigrations

/// Stockroom's database: one writer (SQLite in WAL mode), readers in parallel, and
/// intent-named write transactions that keep every invariant.
public struct AppDatabase: Sendable {
    /// How hard SQLite syncs a commit to disk.
    public enum Synchronous: String, Sendable, CaseIterable {
        /// An fsync on every commit: an acknowledged write survives a crash of the process and of the machine.
        case full = "FULL"
        /// WAL is synced at checkpoints only: a commit survives a crash of the process, not a power loss.
        case normal = "NORMAL"
    }

    let writer: any DatabaseWriter
    /// The database file's device and inode when it was opened (nil in memory): a file removed or
    /// replaced under the server is not the one it writes.
    let fileIdentity: FileIdentity?
    /// The read-only connections of `readNow`, apart from `writer`'s readers. `readNow` blocks its
    /// thread (an event loop) until a connection is free; were those the readers that async reads
    /// hold across a suspension, all event loops could wait for readers whose holders need an
    /// event loop to resume and give them back. These are only ever held by `readNow`, which
    /// never suspends, so a wait for one always ends.
    let requestReaders: RequestReaders?
    /// The read-only connections of streamed snapshots, apart from the others: a snapshot holds its
    /// reader for as long as its client takes to read it, and must not starve the feed's reads.
    let snapshotReader: (any DatabaseReader)?
    /// Where every write queues: many per transaction, one fsync per batch.
    let committer: GroupCommitter
    /// The writer's observer of commits, which every append on the writer hands its entry to.
    var observer: ChangeObserver { committer.observer }
    let inFlight = InFlightKeys()
    /// When shutdown began: from then on writes do not wait for another process's lock
    /// (`GroupCommitter`), and an import gives up after `ShutdownClock.importGrace`.
    let shutdown = ShutdownClock()
    let logger: Logger
    /// The database epoch: created with the database, named in every feed cursor.
    public let epoch: String
    /// The observation layer over committed change entries.
    public let hub: ChangeHub
    /// Verified tokens, so that authenticating a request costs no token lookup.
    let tokenCache = TokenCache()
    /// Items read by `item(_:)`, forgotten as commits change them.
    let itemCache: ItemCache
    /// The next page of the feed log, read while a client catching up reads the one before.
    let feedPrefetch = FeedPagePrefetch()
    /// What one user may hold.
    public var limits = StoreLimits()
    /// Wraps a database connection and migrates it to the newest schema. With `inlineWrites` (which
    /// `open` sets for synchronous=NORMAL), a lone write may run on its caller's thread and the
    /// committer takes over the WAL checkpoint; `busyTimeout` is then the writer connection's own
    /// (see `GroupCommitter.init`).
    public init(
        _ writer: any DatabaseWriter, requestReaders: RequestReaders? = nil, snapshotReader: (any DatabaseReader)? = nil,
        inlineWrites: Bool = false, busyTimeout: Duration = .seconds(5), writesInFlight: WritesInFlight = WritesInFlight(),
        logger: Logger = Logger(label: "stockroom.store")
    ) throws {
        self.writer = writer
        self.requestReaders = requestReaders
        self.snapshotReader = snapshotReader
        self.logger = logger
        let migrator = try Self.migrator()
        // A file a newer stockroom migrated has a schema and rules this one does not know (0012
        // numbers the log without the counter older versions read its head from): refused, unchanged.
        let unknown = try writer.read { db in try migrator.appliedIdentifiers(db).subtracting(migrator.migrations).sorted() }
        guard unknown.isEmpty else {
            throw DatabaseError(
                message: "this file was migrated by a newer stockroom (migrations \(unknown.joined(separator: ", ")) are unknown to this one); "
                    + "open it with that version or a later one")
        }
        try migrator.migrate(writer)
        let (epoch, valueFormat) = try writer.read { db in
            (try MetaRecord.value(db, .epoch) ?? "", try MetaRecord.value(db, .changeValueFormat))
        }
        guard valueFormat == ChangeLog.valueFormat else {
            throw DatabaseError(
                message: "the change log's values are in form \(valueFormat ?? "none"), and this stockroom reads and writes form "
                    + "\(ChangeLog.valueFormat); open the file with the stockroom that wrote it")
        }
        self.epoch = epoch
        let itemCache = ItemCache()
        self.itemCache = itemCache
        let (hub, observer) = try writer.write { db in
            // Registered inside a write, so no commit can fall between reading the head and observing.
            let hub = ChangeHub(head: try ChangeLog.head(db), trimmedThrough: try Self.trimmedThrough(db), epoch: epoch)
            hub.observeTokenGeneration(try Self.tokenGeneration(db))
            let observer = ChangeObserver(hub: hub, itemCache: itemCache)
            db.add(transactionObserver: observer, extent: .databaseLifetime)
            return (hub, observer)
        }
        self.hub = hub
        fileIdentity = FileIdentity(path: writer.path)
        self.committer = GroupCommitter(
            writer: writer, hub: hub, observer: observer, inline: inlineWrites, busyTimeout: busyTimeout, writes: writesInFlight,
            shutdown: shutdown)
    }

    /// Opens (creating it and its folder if missing) and migrates the database file at `path`.
    /// `maxPageCount` caps the file's size (SQLite's `max_page_count`), as a full disk would.
    /// `eachConnection` runs on every connection as it opens, the writer's and the readers' (the
    /// store's tests trace the statements run with it).
    public static func open(
        path: String,
        synchronous: Synchronous = .full,
        busyTimeout: Duration = .seconds(5),
        maxPageCount: Int? = nil,
        writesInFlight: WritesInFlight = WritesInFlight(),
        logger: Logger = Logger(label: "stockroom.store"),
        eachConnection: (@Sendable (Database) throws -> Void)? = nil
    ) throws -> AppDatabase {
        let url = URL(fileURLWithPath: path)
        try prepareFiles(at: url)
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(Double(busyTimeout.components.seconds) + Double(busyTimeout.components.attoseconds) / 1e18)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous.rawValue)")
            // Statement journals (one per savepoint of a group commit) in memory, not temp files.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            if let maxPageCount { try db.execute(sql: "PRAGMA max_page_count = \(maxPageCount)") }
        }
        if let eachConnection { configuration.prepareDatabase(eachConnection) }
        let pool = try DatabasePool(path: url.path, configuration: configuration)
        // Set again on the one writer connection: switching it to WAL mode resets it to NORMAL.
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous.rawValue)")
            try Self.setWriterCache(db, kiB: Self.writerCacheKiB)
        }
        var readerConfiguration = Configuration()
        readerConfiguration.readonly = true
        readerConfiguration.maximumReaderCount = 4
        readerConfiguration.busyMode = configuration.busyMode
        if let eachConnection { readerConfiguration.prepareDatabase(eachConnection) }
        // No mmap_size: the kernel maps 16 neighbouring pages on each fault, so random point reads
        // soon make the whole file resident; two read(2) calls per GET cost less than that.
        let requestReaders = try RequestReaders(path: url.path, configuration: readerConfiguration, count: 4)
        var snapshotConfiguration = readerConfiguration
        snapshotConfiguration.maximumReaderCount = Self.maximumSnapshotReaders
        snapshotConfiguration.prepareDatabase { db in
            // A snapshot reads the table once, in order: a page cache would only hold pages it has
            // passed, so each connection keeps a small one (SQLite's default is 2 MiB).
            try db.execute(sql: "PRAGMA cache_size = -256")
        }
        let snapshotReader = try DatabasePool(path: url.path, configuration: snapshotConfiguration)
        return try AppDatabase(pool, requestReaders: requestReaders, snapshotReader: snapshotReader,
            inlineWrites: synchronous == .normal, busyTimeout: busyTimeout, writesInFlight: writesInFlight, logger: logger)
    }

    /// The writer's page cache, in KiB: room for every interior page of the tables and indexes
    /// (about 2 MiB of them at a million items and as many log entries). A page the writer touched
    /// stays resident until the cache is full, and under a stream of writes most of them are the
    /// log's new tail, which the writer does not read again: a larger cache fills with them and
    /// holds that memory for nothing.
    static let writerCacheKiB = 8 * 1024

    /// The writer's page cache during a bulk write (`SQLiteWriteRows.withBulkCache`), in KiB.
    static let bulkWriteCacheKiB = 32 * 1024

    /// Sets the writer connection's page cache to `kiB` (a cached statement each: a bulk write
    /// sets it twice).
    static func setWriterCache(_ db: Database, kiB: Int) throws {
        try db.cachedStatement(sql: "PRAGMA cache_size = -\(kiB)").execute()
    }

    /// How many snapshots stream at once; more wait for a reader before their answer starts.
    static let maximumSnapshotReaders = 16

    /// Creates the folder of the database at `path`, and any missing parents, readable by the
    /// owner alone (0700), as the files in it are; an existing folder is left as it is.
    public static func createFolder(forDatabase path: String) throws {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
        guard !FileManager.default.fileExists(atPath: directory.path) else { return }
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// A database path that names something other than a file (a folder: `--db-path ./data`
    /// instead of `./data/stockroom.sqlite`).
    public struct NotADatabaseFile: Error, CustomStringConvertible {
        public let path: String
        public let isFolder: Bool
        public var description: String {
            "\(path) is \(isFolder ? "a folder" : "not a regular file"), not a database file; "
                + "--db-path (DB_PATH) names the database file itself, like ./data/stockroom.sqlite"
        }
    }

    /// Throws `NotADatabaseFile` when `path` exists and is not a regular file (a link to one is one):
    /// checked before anything is created or changed beside it.
    public static func checkDatabasePath(_ path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG else { return }
        throw NotADatabaseFile(path: path, isFolder: status.st_mode & S_IFMT == S_IFDIR)
    }

    /// Drafts and token hashes are nobody else's business: a data directory this creates is 0700,
    /// and the database file is created 0600 before SQLite opens it. An existing one is tightened:
    /// its group and others lose every permission and the owner's stay as they are, so that a file
    /// an operator made read-only (0400) stays so, and the start fails saying it cannot write it.
    /// The `-wal` and `-shm` files get the database file's mode, as SQLite gives new ones.
    static func prepareFiles(at url: URL) throws {
        try checkDatabasePath(url.path)
        try createFolder(forDatabase: url.path)
        if !FileManager.default.fileExists(atPath: url.path) {
            createPrivateFile(url.path)
        }
        var database = stat()
        guard stat(url.path, &database) == 0 else { return }
        let mode = database.st_mode & 0o700
        for file in [url.path, url.path + "-wal", url.path + "-shm"] {
            var status = stat()
            guard stat(file, &status) == 0, status.st_mode & 0o777 != mode else { continue }
            _ = chmod(file, mode)
        }
    }

    /// The migrator over the SQL files of `Migrations/`, one transaction each; 0007 also rewrites
    /// the retained navigation values into change-value form 2, and 0011 and 0012 edit the log's definition.
    static func migrator() throws -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in try MigrationFiles.all() {
            let sql = migration.sql
            let identifier = migration.identifier
            migrator.registerMigration(identifier) { db in
                if identifier == "0011_changes_entity_check_compared" {
                    try editingSchema(db, table: "changes", mustContain: "entity = 'item' OR entity = 'navigation'") { try db.execute(sql: sql) }
                    return
                }
                if identifier == "0012_changes_seq_without_counter" {
                    try editingSchema(db, table: "changes", mustContain: "seq                    INTEGER PRIMARY KEY,") { try db.execute(sql: sql) }
                    return
                }
                try db.execute(sql: sql)
                if identifier == "0007_navigation_values" { try rewriteNavigationValues(db) }
            }
        }
        return migrator
    }

    /// Runs `edit`, an UPDATE of `sqlite_schema`, with `writable_schema` on, as SQLite documents for a
    /// constraint every row already meets: the schema version raised after, so that every connection
    /// reads the schema again. Throws, and the migration's transaction rolls back, unless the
    /// table's definition now contains `mustContain` and still parses.
    static func editingSchema(_ db: Database, table: String, mustContain: String, _ edit: () throws -> Void) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
        try db.execute(sql: "PRAGMA writable_schema = ON")
        do {
            try edit()
            try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
            try db.execute(sql: "PRAGMA writable_schema = OFF")
        } catch {
            try? db.execute(sql: "PRAGMA writable_schema = OFF")
            throw error
        }
        let definition = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", arguments: [table])
        guard let definition, definition.contains(mustContain) else {
            throw DatabaseError(message: "the definition of \(table) was not edited: \(definition ?? "no such table")")
        }
        // Parsed again from the edited text: a definition SQLite cannot read fails here, in the transaction.
        _ = try Row.fetchAll(db, sql: "SELECT * FROM \(table) LIMIT 0")
    }

    /// Every retained navigation value, rewritten into change-value form 2.
    static func rewriteNavigationValues(_ db: Database) throws {
        let rows = try Row.fetchCursor(db, sql: "SELECT seq, value FROM changes WHERE entity = 'navigation' AND value IS NOT NULL")
        var rewritten: [(Int64, String)] = []
        while let row = try rows.next() {
            let value = try NavigationValueUpgrade.rewrite(row["value"]) { id in
                try String.fetchOne(db, sql: "SELECT name FROM items WHERE id = ? AND deleted_at IS NULL", arguments: [id.description])
            }
            rewritten.append((row["seq"], value))
        }
        for (seq, value) in rewritten {
            try db.execute(sql: "UPDATE changes SET value = ? WHERE seq = ?", arguments: [value, seq])
        }
    }

    /// The identifiers of the migrations applied to this database, in order.
    public func appliedMigrations() throws -> [String] {
        try writer.read { db in try Self.migrator().appliedMigrations(db) }
    }

    /// Why the database cannot take a write right now, or nil when it can. A real write through the
    /// writer's queue that changes 32 KiB (SQLite writes nothing for an update that changes nothing,
    /// so such a probe passes on a full disk): a full disk, a read-only file or a held lock shows.
    public func writeProbe() async -> String? {
        // Writes to a file removed (its folder deleted) or replaced under the server would succeed
        // and be lost, or unseen by every other process: not ready.
        if let fileIdentity, FileIdentity(path: writer.path) != fileIdentity {
            return "the database file \(writer.path) was removed or replaced while the server ran; restart the server"
        }
        do {
            try await write { db in
                // A database capped by `max_page_count` is full before the disk is: an in-place update
                // would still pass, so say so while fewer pages are left than a write may need.
                let pageCount = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
                let maxPageCount = try Int.fetchOne(db, sql: "PRAGMA max_page_count") ?? Int.max
                let freePages = try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
                guard maxPageCount - pageCount + freePages >= Self.probeSparePages else {
                    throw StoreError.unavailable("the database is full (at its max_page_count)")
                }
                // Random, so every page of it changes: as many WAL frames as a larger write needs. A
                // one-page probe can pass on a full disk, in the room a failed larger write left.
                // SQL: randomblob() makes the bytes inside SQLite, where the query interface has no upsert of an expression.
                try db.execute(
                    sql: """
                        INSERT INTO meta (key, value) VALUES ('ready_probe', hex(randomblob(?)))
                        ON CONFLICT (key) DO UPDATE SET value = excluded.value
                        """,
                    arguments: [Self.probeBytes / 2])
            }
            return nil
        } catch StoreError.unavailable(let message) {
            return message
        } catch {
            return "the database cannot be written: \(error)"
        }
    }

    /// Pages a write may need beyond the free ones; fewer left reads as full.
    static let probeSparePages = 16
    /// How much the probe writes: more than one command or item write (about five pages) needs.
    static let probeBytes = 32 * 1024

    /// Whether the database accepts a write right now (see `writeProbe`).
    public func isWritable() async -> Bool {
        await writeProbe() == nil
    }

    /// Writes from now on do not wait for a lock another process holds (see `GroupCommitter`), and
    /// an import gives up after `ShutdownClock.importGrace`.
    public func shutdownBegins(at instant: ContinuousClock.Instant) {
        shutdown.begin(at: instant)
    }

    /// Copies the WAL into the main file and truncates it; run on shutdown. Without waiting for a
    /// lock another process holds (a busy timeout of 0): shutdown is not held up by it, and a WAL
    /// left behind is copied by the next open's checkpoints.
    @discardableResult
    public func checkpoint() throws -> Bool {
        try committer.excludingCheckpoints {
            try writer.writeWithoutTransaction { db in
                _ = try committer.withoutWaitingForLocks(db) { try db.checkpoint(.truncate) }
            }
        }
        return true
    }

    /// Runs `updates` atomically (its own savepoint in the next group commit), answering once it is
    /// durable, and mapping storage failures to `unavailable`.
    func write<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await committer.write(updates)
        } catch let error as DatabaseError {
            throw Self.mapped(error)
        }
    }

    /// Runs `value` on the calling thread, on a reader connection, outside a transaction, mapping
    /// storage failures to `unavailable`. For the short reads of the request path, whose every
    /// statement stands alone (one row, one page): GRDB's async `read` hops to the reader's queue
    /// and back and wraps the read in BEGIN and COMMIT, which cost more than such a read itself.
    /// A read that needs several statements to agree uses `read`.
    func readNow<T>(_ value: (Database) throws -> T) throws -> T {
        do {
            if let requestReaders { return try requestReaders.read(value) }
            return try writer.read(value)
        } catch let error as DatabaseError {
            throw Self.mapped(error)
        }
    }

    /// Runs `value` in one read transaction, mapping storage failures to `unavailable`.
    func read<T: Sendable>(_ value: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await writer.read(value)
        } catch let error as DatabaseError {
            throw Self.mapped(error)
        }
    }

    static func mapped(_ error: DatabaseError) -> any Error {
        switch error.resultCode {
        case .SQLITE_FULL, .SQLITE_READONLY, .SQLITE_IOERR, .SQLITE_CANTOPEN, .SQLITE_BUSY, .SQLITE_LOCKED,
            .SQLITE_PERM, .SQLITE_NOMEM, .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return StoreError.unavailable("storage cannot be written: \(error.message ?? "\(error.resultCode)")")
        default:
            return error
        }
    }
}

/// Creates an empty file readable and writable by its owner only (at file scope, where `open` is the C call).
func createPrivateFile(_ path: String) {
    let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
    if descriptor >= 0 { close(descriptor) }
}

extension AppDatabase: Storage {}

/// A file's device and inode number.
struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64

    /// Nil when nothing is at `path` (or it is no file name: an in-memory database).
    init?(path: String) {
        var status = stat()
        guard !path.isEmpty, stat(path, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }
}
