import Foundation
import GRDB
import Synchronization

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// The writer connection's WAL length in pages after its last commit, from SQLite's WAL hook,
/// which also turns SQLite's automatic checkpoint off on that connection (it is a WAL hook itself).
final class WALLength: Sendable {
    /// SQLite's automatic checkpoint threshold (`wal_autocheckpoint`'s default).
    static let checkpointPages = 1000

    private let pages = Atomic<Int>(0)
    private let commitCount = Atomic<Int>(0)
    /// The frames a checkpoint beside the writer copied (`Checkpointer`), until the WAL starts over.
    /// A write that comes while such a checkpoint runs keeps the WAL from starting over (the WAL is
    /// not all copied when it begins), so its length alone would stay past the mark and ask for a
    /// checkpoint at every pause, each copying a few pages and syncing both files.
    private let copied = Atomic<Int>(0)

    init(on writer: any DatabaseWriter) {
        writer.writeWithoutTransaction { db in
            // Retained for good (a few bytes per database opened): the hook may outlive the
            // committer, for as long as the connection does.
            let context = Unmanaged.passRetained(self).toOpaque()
            _ = sqlite3_wal_hook(db.sqliteConnection, { context, _, _, pages in
                let length = Unmanaged<WALLength>.fromOpaque(context!).takeUnretainedValue()
                // Shorter than after the last commit: the WAL started over, and nothing of it is copied.
                if Int(pages) < length.pages.load(ordering: .relaxed) { length.copied.store(0, ordering: .relaxed) }
                length.pages.store(Int(pages), ordering: .relaxed)
                length.commitCount.add(1, ordering: .relaxed)
                return SQLITE_OK
            }, context)
        }
    }

    /// Pages in the WAL after the last commit.
    var length: Int { pages.load(ordering: .relaxed) }

    /// Commits so far.
    var commits: Int { commitCount.load(ordering: .relaxed) }

    /// Whether the WAL has grown past the threshold since the last checkpoint: by the pages no
    /// checkpoint beside the writer has copied yet.
    var checkpointDue: Bool {
        let pages = pages.load(ordering: .relaxed)
        let copied = copied.load(ordering: .relaxed)
        return (pages >= copied ? pages - copied : pages) >= Self.checkpointPages
    }

    /// A checkpoint beside the writer copied the WAL's first `frames` frames. Kept only while the WAL
    /// has not started over since (a late call would count frames of the WAL before).
    func checkpointed(frames: Int) {
        if pages.load(ordering: .relaxed) >= frames { copied.store(frames, ordering: .relaxed) }
    }

    /// Whether the WAL has grown to four times the threshold: the writes have not paused for a
    /// checkpoint beside the writer (`Checkpointer`).
    var checkpointOverdue: Bool { pages.load(ordering: .relaxed) >= 4 * Self.checkpointPages }

    func reset() {
        pages.store(0, ordering: .relaxed)
        copied.store(0, ordering: .relaxed)
    }
}
