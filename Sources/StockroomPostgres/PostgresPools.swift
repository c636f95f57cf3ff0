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
/// with fewer connections than loops, only that many loops get a pool, and a call from another
/// loop (or from a thread that is none) takes the pools in turn.
final class PostgresPools: Sendable {
    private let pools: [(loop: any EventLoop, client: PostgresClient)]
    /// Each pool's most connections, in the group's order of its loops.
    let connectionLimits: [Int]
    private let turn = Atomic<Int>(0)

    init(configuration: PostgresClient.Configuration, maximumConnections: Int, group: any EventLoopGroup, logger: Logger) {
        let loops = Array(group.makeIterator().prefix(max(1, maximumConnections)))
        // The first `maximumConnections % loops.count` pools take one more.
        connectionLimits = loops.indices.map { maximumConnections / loops.count + ($0 < maximumConnections % loops.count ? 1 : 0) }
        pools = zip(loops, connectionLimits).map { loop, limit in
            var configuration = configuration
            configuration.options.maximumConnections = limit
            return (loop, PostgresClient(configuration: configuration, eventLoopGroup: loop, backgroundLogger: logger))
        }
    }

    /// Every pool, to run (`PostgresClient.run`) for as long as the store is used.
    var clients: [PostgresClient] { pools.map(\.client) }

    /// The pool of the calling thread's event loop, else the next in turn.
    func client() -> PostgresClient {
        guard pools.count > 1 else { return pools[0].client }
        for pool in pools where pool.loop.inEventLoop { return pool.client }
        return pools[turn.add(1, ordering: .relaxed).oldValue % pools.count].client
    }
}
