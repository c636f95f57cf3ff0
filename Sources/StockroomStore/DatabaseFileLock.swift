#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// An advisory lock (`flock(2)`) on the file `<database>.lock` beside a SQLite database, so that a
/// `restore`, which replaces the database file, never runs under a process that has it open: the
/// server and the commands that use the file hold it shared, `restore` holds it exclusive. Each
/// waits a little (`patience`) for a lock held the other way, then gives up with an error that says
/// who holds it: a process that forks while holding the lock shares it with the child until the
/// child execs, so a lock can outlive its release for a moment. The lock is a file of its
/// own because SQLite's locks on the database are POSIX record locks, which closing any other
/// descriptor of that file would drop. The kernel lets go of it when the process ends, however it ends.
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

    /// `<databasePath>.lock`.
    public static func path(forDatabase databasePath: String) -> String { databasePath + ".lock" }

    public let path: String
    private let descriptor: Mutex<Int32?>

    /// Takes the lock of the database at `databasePath` (its folder must exist), trying every 20 ms
    /// while it is held the other way, and throwing `Held` once `patience` has passed.
    public init(database databasePath: String, mode: Mode, patience: Duration = .seconds(2)) throws {
        path = Self.path(forDatabase: databasePath)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failed(lockPath: path, errno: errno) }
        let operation = (mode == .shared ? LOCK_SH : LOCK_EX) | LOCK_NB
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
            if error == EWOULDBLOCK { throw Held(lockPath: path, wanted: mode) }
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
