import Logging
import PostgresNIO
@testable import StockroomPostgres
import Testing

/// The daemon's pools: one per event loop, `db.maxConnections` shared out over them, a call on a
/// loop served by that loop's pool while it has room. (The store's suites run every statement
/// through them.)
@Suite("PostgreSQL: a connection pool per event loop")
struct PostgresPoolsTests {
    let group = PostgresClient.defaultEventLoopGroup
    var loops: [any EventLoop] { Array(group.makeIterator()) }

    func pools(_ maximumConnections: Int) -> PostgresPools {
        PostgresPools(
            configuration: .init(host: "127.0.0.1", username: "nobody", password: nil, database: nil, tls: .disable),
            maximumConnections: maximumConnections, group: group, logger: Logger(label: "test"))
    }

    @Test("the connections are shared out over the loops, never more in all than the setting")
    func sharedOut() {
        for maximum in [1, 2, 3, 20, 21] {
            let limits = pools(maximum).pools.map(\.limit)
            #expect(limits.reduce(0, +) == maximum)
            #expect(limits.count == min(loops.count, maximum))
            #expect(limits.allSatisfy { $0 >= 1 })
            #expect(limits.max()! - limits.min()! <= 1)
        }
    }

    @Test("a call on an event loop takes that loop's pool")
    func ownLoop() async throws {
        let pools = pools(20)
        for (index, loop) in loops.enumerated() {
            // Several in a row: taken in turn or by load instead, they could go to another pool.
            for _ in 0..<3 {
                let pool = try await loop.submit { pools.choose() }.get()
                #expect(pool === pools.pools[index])
                pool.calls.add(1, ordering: .relaxed)
            }
        }
    }

    @Test("a call whose loop's pool is full takes the pool with the fewest calls")
    func spillOver() async throws {
        let pools = pools(20)
        guard pools.pools.count > 1 else { return }
        let own = pools.pools[0]
        own.calls.store(own.limit, ordering: .relaxed)
        pools.pools[1].calls.store(3, ordering: .relaxed)
        let chosen = try await loops[0].submit { pools.choose() }.get()
        #expect(chosen !== own)
        #expect(chosen.calls.load(ordering: .relaxed) == pools.pools.dropFirst().map { $0.calls.load(ordering: .relaxed) }.min())
        // With room again, the loop's own pool.
        own.calls.store(own.limit - 1, ordering: .relaxed)
        #expect(try await loops[0].submit { pools.choose() }.get() === own)
    }
}
