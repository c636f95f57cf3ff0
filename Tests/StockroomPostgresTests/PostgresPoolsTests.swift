import Logging
import PostgresNIO
@testable import StockroomPostgres
import Testing

/// The daemon's pools: one per event loop, `db.maxConnections` shared out over them, a call on a
/// loop served by that loop's pool unless it is busier than another by more than a margin. (The
/// store's suites run every statement through them.)
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
            // Several in a row: taken in turn instead, they would go round the pools.
            for _ in 0..<3 {
                #expect(try await loop.submit { pools.choose() }.get() === pools.pools[index])
            }
        }
    }

    @Test("a loop's own pool is taken up to `margin` calls more than the least busy, then the least busy")
    func sharesWithTheLeastBusy() async throws {
        let pools = pools(20)
        guard pools.pools.count > 1 else { return }
        let own = pools.pools[0]
        pools.pools.dropFirst().forEach { $0.calls.store(3, ordering: .relaxed) }
        own.calls.store(3 + PostgresPools.margin, ordering: .relaxed)
        #expect(try await loops[0].submit { pools.choose() }.get() === own)
        own.calls.store(3 + PostgresPools.margin + 1, ordering: .relaxed)
        let chosen = try await loops[0].submit { pools.choose() }.get()
        #expect(chosen !== own)
        #expect(chosen.calls.load(ordering: .relaxed) == 3)
    }
}

/// What each pool keeps of its connections: `PostgresPools.warm` open from the start (the pool
/// schedules no idle timer for them), with TCP keepalives from PostgreSQL in place of
/// postgres-nio's keep-alive query.
@Suite("PostgreSQL: the pools' warm connections")
struct PostgresWarmConnectionsTests {
    @Test("each pool opens its warm connections before any call, and PostgreSQL sends them TCP keepalives")
    func warmAndKeptAlive() async throws {
        // Neither listening nor polling, so that no call of the store's own takes a connection.
        try await withDaemons(1, pollInterval: .seconds(600), listens: false, maximumConnections: 20) { stores, url in
            let store = stores[0]
            let expected = store.pools.pools.map { min(PostgresPools.warm, $0.limit) }.reduce(0, +)
            #expect(expected >= 2)
            // No call has run on the pools yet: whatever connections they hold, they opened by themselves.
            var open = 0
            for _ in 0..<200 {
                open = try await withConnection(url) { connection in
                    try await connection.values(
                        "SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'stockroom' AND query NOT ILIKE 'LISTEN%'",
                        as: Int.self
                    ).first ?? 0
                }
                if open >= expected { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(open == expected)
            let settings = try await store.read { connection in
                try await connection.values(
                    "SELECT current_setting('tcp_keepalives_idle') || ' ' || current_setting('tcp_keepalives_interval') || ' ' || current_setting('tcp_keepalives_count')",
                    as: String.self)
            }
            #expect(settings == ["30 10 3"])
        }
    }
}
