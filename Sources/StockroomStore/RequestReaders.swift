import Foundation
import GRDB
import Synchronization

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// The read-only connections of `readNow`, taken in turn: `open` makes each a `DatabaseQueue` of
/// its own. A `DatabasePool` reader costs a barrier on the pool's queue, a semaphore and a key path
/// per read before it reaches its connection's queue; a queue's read is one `DispatchQueue.sync`
/// onto its connection. Two event loops that pick the same connection take turns, as they would
/// for a pool's last free reader.
public final class RequestReaders: Sendable {
    private let readers: [any DatabaseReader]
    private let next = Atomic<Int>(0)

    /// Reads on `readers` in turn (tests pass a pool or a queue of their own).
    public init(_ readers: [any DatabaseReader]) {
        precondition(!readers.isEmpty)
        self.readers = readers
    }

    /// Opens `count` read-only connections to the database at `path`.
    public convenience init(path: String, configuration: Configuration, count: Int) throws {
        self.init(try (0..<count).map { _ in try DatabaseQueue(path: path, configuration: configuration) })
    }

    /// Runs `value` on the calling thread, on the next connection, outside a transaction.
    func read<T>(_ value: (Database) throws -> T) throws -> T {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        return try readers[Int(UInt(bitPattern: index) % UInt(readers.count))].unsafeRead(value)
    }
}
