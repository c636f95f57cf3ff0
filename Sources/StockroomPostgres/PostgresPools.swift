import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The daemon's connections to PostgreSQL: one pool (`PostgresClient`) per event loop, each
/// pool's connections on its loop, as Vapor's `EventLoopGroupConnectionPool` keeps them. A
/// storage call takes a connection of the pool of the loop it runs on, so that its statements, the
/// answers they wait for and its request's response stay on that one thread. A connection on
/// another loop costs a call two hops between the loops, one to send its first statement and one
/// to write its request's answer, and each hop waits for that loop to wake or to finish what it
/// runs (a fan-out to a thousand streams).
///
/// `maximumConnections` is shared out over the loops, so the daemon never opens more than it says;
/// with fewer connections than loops, only that many loops get a pool. A call whose loop's pool has
/// more calls than the least busy pool by over `margin`, or that runs on no loop of the group,
/// takes the least busy pool: a loop that was handed more connections than the other (NIO deals
/// accepted connections out in turn with the loops' other uses), or whose calls hold connections
/// long (snapshot streams), shares its database work with the other loop, at the cost of the hops,
/// instead of queueing it all behind its own; and every loop can use every connection.
final class PostgresPools: Sendable {
    final class Pool: Sendable {
        let loop: any EventLoop
        let client: PostgresClient
        /// The most connections it opens.
        let limit: Int
        /// Calls holding one of its connections or waiting for one.
        let calls = Atomic<Int>(0)

        init(loop: any EventLoop, client: PostgresClient, limit: Int) {
            self.loop = loop
            self.client = client
            self.limit = limit
        }
    }

    /// In the group's order of its loops.
    let pools: [Pool]
    /// How many more calls than the least busy pool a loop's own pool may have and still be taken.
    static let margin = 2
    /// Connections each pool keeps open from the start, however idle.
    static let warm = 2

    init(configuration: PostgresClient.Configuration, maximumConnections: Int, group: any EventLoopGroup, logger: Logger) {
        let loops = Array(group.makeIterator().prefix(max(1, maximumConnections)))
        pools = loops.enumerated().map { index, loop in
            // The first `maximumConnections % loops.count` pools take one more.
            let limit = maximumConnections / loops.count + (index < maximumConnections % loops.count ? 1 : 0)
            var configuration = configuration
            configuration.options.maximumConnections = limit
            // No keep-alive query: postgres-nio would schedule its timer (a task group of two child
            // tasks and a clock's sleep) each time a connection goes back to the pool, and cancel
            // it at the next lease: one for every batch of writes and every read. The connections
            // are kept alive by TCP keepalives instead (`PostgresStore.open`).
            configuration.options.keepAliveBehavior = nil
            // The pool leases its lowest-numbered free connection, and only connections past its
            // minimum get an idle timer (the same kind) each time they go back: with `warm` kept
            // open, a batch and a read beside it never schedule one. Past those, connections are
            // opened on demand and closed after a minute idle.
            configuration.options.minimumConnections = min(Self.warm, limit)
            return Pool(loop: loop, client: PostgresClient(configuration: configuration, eventLoopGroup: loop, backgroundLogger: logger), limit: limit)
        }
    }

    /// Every pool's client, to run (`PostgresClient.run`) for as long as the store is used.
    var clients: [PostgresClient] { pools.map(\.client) }

    /// Runs `body` with a connection of the pool `choose` picks, given back when `body` returns.
    func withConnection<Value>(_ body: (PostgresConnection) async throws -> Value) async throws -> Value {
        let pool = choose()
        pool.calls.add(1, ordering: .relaxed)
        defer { pool.calls.subtract(1, ordering: .relaxed) }
        return try await pool.client.withConnection(body)
    }

    /// The pool of the calling thread's event loop unless it has more than `margin` calls more
    /// than the pool with the fewest, else that one.
    func choose() -> Pool {
        guard pools.count > 1 else { return pools[0] }
        let least = pools.min { $0.calls.load(ordering: .relaxed) < $1.calls.load(ordering: .relaxed) }!
        if let own = pools.first(where: { $0.loop.inEventLoop }),
            own.calls.load(ordering: .relaxed) <= least.calls.load(ordering: .relaxed) + Self.margin
        {
            return own
        }
        return least
    }
}
