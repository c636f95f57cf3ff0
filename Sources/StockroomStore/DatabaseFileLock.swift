#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// An advisory lock (`flock(2)`) on the file `<database>.lock` beside a SQLite database, so that a
/// `restore`, which replaces the database file, never runs under a process that has it open: the
/// server and the commands that use the file hold it shared, `restore` holds it exclusive. Each
/// waits a little (`patience`) for a lock held the other way, then gives up with an error that says
/// who holds it: a process that forks while holding the lock shares it with the child until the
/// child execs, so a lock can outlive its release for a moment. The lock is a file of its
/// own because SQLite's locks on the database are POSIX record locks, which closing any other
/// descriptor of that file would drop. The kernel lets go of it when the process ends, however it ends.
/// A server also holds `<database>.server.lock` exclusively (`init(serving:)`): one server per file.
public final class DatabaseFileLock: Sendable {
    public enum Mode: Sendable {
        /// Any number of holders: the processes that use the database.
        case shared
        /// One holder and no shared ones: the process that replaces the database.
        case exclusive
    }

    /// The lock is held the other way.
    public struct Held: Error, CustomStringConvertible {
        public let lockPath: String
        public let wanted: Mode
        public var description: String {
            switch wanted {
            case .exclusive:
                "the database is in use: a server or another stockroom command has it open (it holds \(lockPath)); stop it first"
            case .shared:
                "the database is being replaced by `stockroom restore` (it holds \(lockPath)); start once it has finished"
            }
        }
    }

    /// The lock file could not be opened or locked, for another reason than its being held.
    public struct Failed: Error, CustomStringConvertible {
        public let lockPath: String
        public let errno: Int32
        public var description: String { "cannot lock \(lockPath): \(String(cString: strerror(errno)))" }
    }

    /// A server holds the database's serving lock: another server on the file would not see its
    /// writes in its caches.
    public struct Serving: Error, CustomStringConvertible {
        public let lockPath: String
        public var description: String {
            "another server has this database open (it holds \(lockPath)); one server per SQLite file: stop it first, "
                + "or run several daemons on PostgreSQL (docs/production.md)"
        }
    }

    /// `<databasePath>.lock`, where `databasePath` is the file itself: symbolic links resolved, so
    /// that every name of one file has one lock.
    public static func path(forDatabase databasePath: String) -> String { canonicalPath(databasePath) + ".lock" }

    /// `databasePath` as the file's own name: absolute, its symbolic links (the file's and its
    /// folders') resolved, as far as the path exists.
    public static func canonicalPath(_ databasePath: String) -> String {
        let absolute = URL(fileURLWithPath: databasePath).standardizedFileURL.path
        // The deepest part of the path that exists, resolved, and the rest as written (folders a
        // command creates next).
        var existing = absolute
        var rest: [String] = []
        while existing != "/" && !existing.isEmpty {
            if let resolved = realPath(existing) {
                return rest.reversed().reduce(resolved) { ($0 as NSString).appendingPathComponent($1) }
            }
            rest.append((existing as NSString).lastPathComponent)
            existing = (existing as NSString).deletingLastPathComponent
        }
        return absolute
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    public let path: String
    private let descriptor: Mutex<Int32?>

    /// Takes the lock of the database at `databasePath` (its folder must exist), trying every 20 ms
    /// while it is held the other way, and throwing `Held` once `patience` has passed.
    public convenience init(database databasePath: String, mode: Mode, patience: Duration = .seconds(2)) throws {
        let path = Self.path(forDatabase: databasePath)
        try self.init(path: path, operation: mode == .shared ? LOCK_SH : LOCK_EX, patience: patience) { Held(lockPath: path, wanted: mode) }
    }

    /// Takes the serving lock of the database at `databasePath` (`<database>.server.lock`,
    /// exclusive), which a server holds beside the shared one: a second server on the file throws
    /// `Serving` once `patience` has passed (a server still exiting lets go of it meanwhile).
    public convenience init(serving databasePath: String, patience: Duration = .seconds(2)) throws {
        let path = Self.canonicalPath(databasePath) + ".server.lock"
        try self.init(path: path, operation: LOCK_EX, patience: patience) { Serving(lockPath: path) }
    }

    private init(path: String, operation: Int32, patience: Duration, held: () -> any Error) throws {
        self.path = path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failed(lockPath: path, errno: errno) }
        let operation = operation | LOCK_NB
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        while flock(fd, operation) != 0 {
            let error = errno
            if error == EINTR { continue }
            if error == EWOULDBLOCK, clock.now < deadline {
                usleep(20_000)
                continue
            }
            close(fd)
            if error == EWOULDBLOCK { throw held() }
            throw Failed(lockPath: path, errno: error)
        }
        descriptor = Mutex(fd)
    }

    /// Lets go of the lock (again is nothing).
    public func release() {
        guard let fd = descriptor.withLock({ fd in defer { fd = nil }; return fd }) else { return }
        close(fd)
    }

    deinit { release() }
}
