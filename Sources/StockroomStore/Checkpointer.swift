import Foundation
import GRDB
import Synchronization

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// Runs the WAL checkpoint once writes pause, on a connection and a thread of its own, so that
/// neither a write nor its answer waits for it. PASSIVE, as SQLite's automatic checkpoint: it copies
/// what no reader still needs and never waits; the next write after it finds the whole WAL copied
/// starts the WAL over.
final class Checkpointer: Sendable {
    /// How long no commit must come for the writes to count as paused.
    static let quiet = DispatchTimeInterval.milliseconds(1)

    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "stockroom.checkpointer")
    private let wal: WALLength
    /// A checkpoint is asked for and not yet run.
    private let requested = Atomic<Bool>(false)
    private let runs = Atomic<Int>(0)

    /// Nil when `writer` is not a database file (an in-memory database has no WAL).
    init?(beside writer: any DatabaseWriter, wal: WALLength) {
        let path = writer.path
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file::memory:") else { return nil }
        // The checkpoint syncs as the writer's commits do (with synchronous=OFF it would not sync the file).
        guard let synchronous = try? writer.writeWithoutTransaction({ db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }) else {
            return nil
        }
        var configuration = Configuration()
        configuration.label = "stockroom.checkpointer"
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
        guard let connection = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        self.connection = connection
        self.wal = wal
    }

    /// Checkpoints run so far (counted once each has finished).
    var count: Int { runs.load(ordering: .acquiring) }

    /// Asks for a checkpoint at the next pause in the writes (nothing when one is asked for already).
    func request() {
        guard requested.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        runWhenQuiet(since: wal.commits)
    }

    private func runWhenQuiet(since commits: Int) {
        queue.asyncAfter(deadline: .now() + Self.quiet) { [self] in
            // The writer may have run one meanwhile (the WAL reached `checkpointOverdue`).
            guard wal.checkpointDue else {
                requested.store(false, ordering: .relaxed)
                return
            }
            let now = wal.commits
            guard now == commits else { return runWhenQuiet(since: now) }
            requested.store(false, ordering: .relaxed)
            if let result = try? connection.writeWithoutTransaction({ db in try db.checkpoint(.passive) }) {
                wal.checkpointed(frames: result.checkpointedFrameCount)
            }
            runs.add(1, ordering: .releasing)
        }
    }

    /// Runs `body` while no checkpoint of this checkpointer's runs (another connection's checkpoint
    /// would fail at once while one does).
    func excluding<T>(_ body: () throws -> T) rethrows -> T {
        try queue.sync(execute: body)
    }
}
