import ArgumentParser
import Foundation
import StockroomPostgres
import StockroomServer
import StockroomStore

/// `stockroom backup --to FILE`: an online copy of the live database, verified.
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the database into a new file while the server runs, and verify the copy.",
        discussion: """
            The SQLite file only: with --db-url (or DB_URL) naming PostgreSQL it refuses; pg_dump is the backup \
            there (docs/production.md, "On PostgreSQL: several daemons").
            """)

    @Option(name: .customLong("to"), help: "The new file to write (must not exist).")
    var destination: String

    @OptionGroup var storage: StorageOptions

    func run() async throws {
        let database = try await storage.openDatabase(existing: true)
        do {
            let summary = try database.backup(to: destination)
            print("Backed up to \(destination): \(summary.bytes) bytes, integrity ok, migration \(summary.migration), epoch \(summary.epoch).")
        } catch {
            throw Startup.failure("backup failed, nothing written: \(error)")
        }
    }
}

/// `stockroom restore --from FILE`: replace the SQLite database with a verified backup, under a
/// new epoch. On PostgreSQL (`--db-url`), after `pg_restore` and with no `--from`: a new epoch.
struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replace the database with a backup (stop the server first); cursors from before get 410.",
        discussion: """
            On PostgreSQL (--db-url), restore a pg_dump with pg_restore, then run this without --from: it gives \
            the database a new epoch, so that every cursor from before gets 410 and clients take a new snapshot.
            """)

    @Option(name: .customLong("from"), help: "The backup file to restore (SQLite; leave it out on PostgreSQL).")
    var source: String?

    @OptionGroup var storage: StorageOptions

    func run() async throws {
        let settings = try Startup.settings(try await storage.reader())
        if let url = settings.databaseURL {
            guard source == nil else {
                throw Startup.usageError(
                    "on PostgreSQL restore a pg_dump with pg_restore, then run `stockroom restore --db-url URL` without --from")
            }
            do {
                let (old, new) = try await PostgresStore.startNewEpoch(url: url)
                print("\(url): new epoch \(new) (was \(old)).")
                print("Feed cursors from before now get 410 resyncRequired; restart every daemon on this database.")
            } catch {
                throw Startup.failure(StartupError.postgres(url: url.description, underlying: error).description)
            }
            return
        }
        guard let source else { throw Startup.usageError("--from FILE is required: the backup file to restore") }
        do {
            let summary = try AppDatabase.restore(from: source, to: settings.databasePath)
            print("Restored \(settings.databasePath) from \(source): integrity ok, migration \(summary.migration), new epoch \(summary.epoch).")
            print("Feed cursors from before the restore now get 410 resyncRequired; clients take a new snapshot.")
        } catch {
            throw Startup.failure("restore failed, nothing replaced: \(error)")
        }
    }
}
