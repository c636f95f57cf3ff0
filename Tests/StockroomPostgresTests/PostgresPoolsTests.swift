import Logging
import PostgresNIO
@testable import StockroomPostgres
import Testing

/// The daemon's pools: one per event loop, `db.maxConnections` shared out over them, and a call on
/// a loop served by that loop's pool. (The store's suites run every statement through them.)
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
        let count = loops.count
        for maximum in [1, 2, 3, 20, 21] {
            let limits = pools(maximum).connectionLimits
            #expect(limits.reduce(0, +) == maximum)
            #expect(limits.count == min(count, maximum))
            #expect(limits.allSatisfy { $0 >= 1 })
            #expect(limits.max()! - limits.min()! <= 1)
        }
    }

    @Test("a call on an event loop takes that loop's pool")
    func ownLoop() async throws {
        let pools = pools(20)
        for (index, loop) in loops.enumerated() {
            // Several in a row: taken in turn instead, they would go round the pools.
            for _ in 0..<3 {
                let client = try await loop.submit { pools.client() }.get()
                #expect(client === pools.clients[index])
            }
        }
    }
}
