import StockroomStorage
import Foundation
import GRDB

/// Why a backup or restore did not happen; nothing was replaced then.
public struct BackupError: Error, CustomStringConvertible {
    /// What is wrong, and with which file.
    public var description: String
    init(_ description: String) { self.description = description }
}

extension AppDatabase {
    /// Copies the live database into a new file at `path` with SQLite's backup API (from one read
    /// snapshot, while writes go on), then checks the copy with `PRAGMA integrity_check`. The copy
    /// is written beside `path` and renamed into place only once it checks out.
    public func backup(to path: String) throws -> BackupSummary {
        let target = URL(fileURLWithPath: path)
        guard !FileManager.default.fileExists(atPath: target.path) else {
            throw BackupError("\(target.path) exists; remove it or choose another file")
        }
        let folder = target.deletingLastPathComponent().path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw BackupError("the folder \(folder) does not exist; create it or choose another file")
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw BackupError("the folder \(folder) cannot be written by this user; choose another file")
        }
        let partial = target.path + ".partial"
        Self.removeDatabaseFiles(at: partial)
        do {
            // Readable by its owner only, as the live database is.
            createPrivateFile(partial)
            let copy = try DatabaseQueue(path: partial)
            try writer.backup(to: copy)
            let summary = try Self.verify(copy, name: target.path)
            try copy.close()
            try FileManager.default.moveItem(atPath: partial, toPath: target.path)
            return summary
        } catch {
            Self.removeDatabaseFiles(at: partial)
            throw error
        }
    }

    /// Replaces the database at `path` with the backup at `source`, for a stopped server (refused
    /// with `DatabaseFileLock.Held` while anything holds the database's lock): checks the backup
    /// (a SQLite file, intact, with no migration this binary does not know) in a copy beside `path`
    /// (nothing is written beside `source`), copies it into a new file there, migrates that and
    /// gives it a new epoch, so that every cursor from before gets `resyncRequired`, and only then
    /// moves it into place. On any error nothing is replaced.
    public static func restore(from source: String, to path: String) throws -> BackupSummary {
        let sourceURL = URL(fileURLWithPath: source)
        guard FileManager.default.fileExists(atPath: sourceURL.path) else {
            throw BackupError("\(sourceURL.path) does not exist")
        }
        // The file itself, whatever name it was given (a symbolic link is replaced by nothing: the
        // file it names is), so that the lock is the one every process on that file takes.
        let target = URL(fileURLWithPath: DatabaseFileLock.canonicalPath(path))
        do {
            try checkDatabasePath(target.path)
        } catch {
            throw BackupError("\(error)")
        }
        try createFolder(forDatabase: target.path)
        // Read from a copy beside the target, not in place: a file in WAL mode (a backup is one)
        // opened even read-only makes `-shm` and `-wal` files beside itself, which a backup on
        // read-only media cannot have, and which would be left beside the backup.
        let staged = target.path + ".restore-source-\(getpid())"
        removeDatabaseFiles(at: staged)
        defer { removeDatabaseFiles(at: staged) }
        do {
            for suffix in ["", "-wal"] where suffix.isEmpty || FileManager.default.fileExists(atPath: sourceURL.path + suffix) {
                try FileManager.default.copyItem(atPath: sourceURL.path + suffix, toPath: staged + suffix)
                _ = chmod(staged + suffix, 0o600)
            }
        } catch {
            let reason = (error as NSError).domain == NSCocoaErrorDomain ? (error as NSError).localizedDescription : "\(error)"
            throw BackupError("\(sourceURL.path) cannot be copied beside \(target.path): \(reason)")
        }
        var readOnly = Configuration()
        readOnly.readonly = true
        let backup: DatabaseQueue
        do {
            backup = try DatabaseQueue(path: staged, configuration: readOnly)
            _ = try backup.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
        } catch {
            throw BackupError("\(sourceURL.path) is not a SQLite database: \(error)")
        }
        let known = Set(try MigrationFilesIdentifiers.all())
        let applied: [String]
        do {
            applied = try backup.read { db in
                try integrityCheck(db, name: sourceURL.path)
                guard try db.tableExists("grdb_migrations"), try db.tableExists("meta") else {
                    throw BackupError("\(sourceURL.path) is not a Stockroom database")
                }
                return try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
            }
        } catch let error as BackupError {
            throw error
        } catch {
            throw BackupError("\(sourceURL.path) cannot be read: \(error)")
        }
        let unknown = applied.filter { !known.contains($0) }
        guard unknown.isEmpty else {
            throw BackupError(
                "\(sourceURL.path) has a newer schema (migrations \(unknown.joined(separator: ", ")) are unknown to this version); restore it with a newer stockroom")
        }

        // Held until the new file is in place: a server that has the old one open refuses the
        // restore, and one that starts meanwhile refuses to start.
        let lock = try DatabaseFileLock(database: target.path, mode: .exclusive)
        defer { lock.release() }
        let partial = target.path + ".restoring"
        removeDatabaseFiles(at: partial)
        do {
            createPrivateFile(partial)
            let copy = try DatabaseQueue(path: partial)
            try backup.backup(to: copy)
            try backup.close()
            try migrator().migrate(copy)
            try copy.write { db in
                // SQL: a new epoch made as migration 0001 makes the first, by SQLite's randomblob().
                try db.execute(sql: "UPDATE meta SET value = lower(hex(randomblob(16))) WHERE key = 'epoch'")
                try MetaRecord.deleteOne(db, key: MetaRecord.Key.readyProbe)
            }
            let summary = try verify(copy, name: partial)
            try copy.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
            try copy.close()
            removeDatabaseFiles(at: target.path)
            try FileManager.default.moveItem(atPath: partial, toPath: target.path)
            return summary
        } catch {
            removeDatabaseFiles(at: partial)
            throw error
        }
    }

    /// `integrity_check` of `db`, throwing what it found unless "ok".
    static func integrityCheck(_ db: Database, name: String) throws {
        let result = try String.fetchAll(db, sql: "PRAGMA integrity_check")
        guard result == ["ok"] else {
            throw BackupError("\(name) failed its integrity check: \(result.prefix(5).joined(separator: "; "))")
        }
    }

    static func verify(_ copy: DatabaseQueue, name: String) throws -> BackupSummary {
        try copy.read { db in
            try integrityCheck(db, name: name)
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0
            return BackupSummary(
                pages: pages, bytes: pages * pageSize,
                migration: try String.fetchOne(db, sql: "SELECT max(identifier) FROM grdb_migrations") ?? "none",
                epoch: try MetaRecord.value(db, .epoch) ?? "")
        }
    }

    /// Removes the database file at `path` and its `-wal`, `-shm` and `-journal`: regular files
    /// only, never a folder (`removeItem` would remove one with everything in it) or what a link names.
    static func removeDatabaseFiles(at path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            var status = stat()
            guard lstat(path + suffix, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            unlink(path + suffix)
        }
    }
}

/// The identifiers of the migrations this binary ships.
enum MigrationFilesIdentifiers {
    static func all() throws -> [String] { try AppDatabase.migrator().migrations }
}
