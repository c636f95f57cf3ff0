import Foundation
import PostgresNIO
import StockroomCore
@testable import StockroomPostgres
import StockroomStorage
import Synchronization
import TestSupport
import Testing

/// The change feed across daemons: one log in commit order, wake-ups by LISTEN/NOTIFY, exactness
/// by the table. Each test runs several `PostgresStore`s on one database.
@Suite("PostgreSQL feed across daemons", .enabled(if: TestPostgres.isAvailable, "PostgreSQL 15 is not installed"))
struct PostgresFeedTests {
    static let erin = Origin(user: "erin", clientID: "erins-phone")
    static let draft = Draft(name: "Keyboard", color: nil, status: .inStock(quantity: 1))

    @Test(.timeLimit(.minutes(10)))
    func aWriteOnOneDaemonWakesASubscriberOnAnother() async throws {
        try await withDaemons(2, pollInterval: .seconds(60)) { daemons, _ in
            let (a, b) = (daemons[0], daemons[1])
            try await eventually("both daemons listen") { a.isListening && b.isListening }
            let subscription = b.hub.subscribe(FeedFilter(user: "erin", topics: [.item]))
            defer { subscription.cancel() }
            let woken = Task { await subscription.wait(timeout: .seconds(30)) }
            try await eventually("the wait is parked") { subscription.isWaiting }
            let item = try await a.createItem(id: nil, draft: Self.draft, origin: Self.erin, idempotency: nil).value
            // The poll is a minute away: only the notification can have woken it.
            #expect(await woken.value == true)
            let page = try await b.readChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item]), limit: 10)
            #expect(page.changes.map(\.id) == [item.id.description])
            #expect(b.hub.recentChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item]), limit: 10)?.changes.map(\.seq) == [1])
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aListenerWhoseConnectionDiesCatchesUpWithNothingLostOrRepeated() async throws {
        try await withDaemons(2, pollInterval: .seconds(60)) { daemons, url in
            let (a, b) = (daemons[0], daemons[1])
            try await eventually("both daemons listen") { a.isListening && b.isListening }
            // A subscriber on b: b reads every commit into memory (an idle daemon only moves its head).
            let subscription = b.hub.subscribe(FeedFilter(user: "erin", topics: [.item]))
            defer { subscription.cancel() }
            _ = try await a.createItem(id: nil, draft: Self.draft, origin: Self.erin, idempotency: nil)
            try await eventually("b has seq 1") { b.hub.head == 1 }
            // Every listener's backend goes; writes land while they reconnect.
            try await withConnection(url) { connection in
                let killed = try await connection.values(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database()",
                    as: Bool.self)
                #expect(killed.count == 2)
            }
            for _ in 0..<5 { _ = try await a.createItem(id: nil, draft: Self.draft, origin: Self.erin, idempotency: nil) }
            try await eventually("b caught up to seq 6") { b.hub.head == 6 }
            let seen = b.hub.recentChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100)?.changes.map(\.seq)
            #expect(seen == Array(1...6))
            try await eventually("b listens again") { b.isListening }
            _ = try await a.createItem(id: nil, draft: Self.draft, origin: Self.erin, idempotency: nil)
            try await eventually("b has seq 7 from the new listener") { b.hub.head == 7 }
        }
    }

    /// A daemon with no subscriber follows the others' commits by their head alone, reading no
    /// entry; a subscriber that arrives, while writes go on, reads every change once, in order.
    @Test(.timeLimit(.minutes(10)))
    func anIdleDaemonMovesItsHeadWithoutReadingAndASubscriberThatArrivesMissesNothing() async throws {
        try await withDaemons(2, pollInterval: .seconds(60)) { daemons, _ in
            let (a, b) = (daemons[0], daemons[1])
            try await eventually("both daemons listen") { a.isListening && b.isListening }
            let filter = FeedFilter(user: "erin", topics: [.item])
            for _ in 0..<5 { _ = try await a.createItem(id: nil, draft: Self.draft, origin: Self.erin, idempotency: nil) }
            try await eventually("b's head follows a's commits") { b.hub.head == 5 }
            // Nothing was read into b's memory: the changes come from the table.
            #expect(b.hub.recentChanges(after: 0, filter: filter, limit: 100) == nil)
            // b's own commit after a gap (a's sixth, which b may not have heard of): its head takes it.
            _ = try await a.createItem(id: nil, draft: Self.draft, origin: Self.erin, idempotency: nil)
            _ = try await b.createItem(id: nil, draft: Self.draft, origin: Self.erin, idempotency: nil)
            #expect(b.hub.head == 7)
            #expect(try await b.readChanges(after: 5, filter: filter, limit: 100).changes.map(\.seq) == [6, 7])

            // A subscriber arrives while a writes on: from then on b reads every commit, and the
            // subscriber, reading past its cursor, sees 1...head once each.
            let writer = Task {
                for _ in 0..<40 { _ = try await a.createItem(id: nil, draft: Self.draft, origin: Self.erin, idempotency: nil) }
            }
            let subscription = b.hub.subscribe(filter)
            defer { subscription.cancel() }
            var seen: [Int64] = []
            while seen.count < 47 {
                let page = try await b.readChanges(after: seen.last ?? 0, filter: filter, limit: 10)
                seen += page.changes.map(\.seq)
                if page.changes.isEmpty { _ = await subscription.wait(timeout: .seconds(10)) }
            }
            try await writer.value
            #expect(seen == Array(1...47))
            try await eventually("b reads commits into memory again") {
                b.hub.recentChanges(after: 46, filter: filter, limit: 10)?.changes.map(\.seq) == [47]
            }
        }
    }

    /// A daemon whose listener starts (or comes back) after commits it did not hear of, with no
    /// subscriber, moves its head to them without reading them, as it does for a notification.
    @Test(.timeLimit(.minutes(10)))
    func anIdleDaemonThatStartsListeningLateReadsNothing() async throws {
        let url = try PostgresURL(try await TestPostgres.shared().newDatabase())
        func open() async throws -> PostgresStore {
            try await PostgresStore.open(url: url, deadline: .seconds(30), logger: Logger(label: "test.daemon"))
        }
        let a = try await open()
        let b = try await open()
        let runningA = Task { try await a.run() }
        defer { runningA.cancel() }
        // b opened at head 0 and does not listen yet: it hears of none of these.
        for _ in 0..<5 { _ = try await a.createItem(id: nil, draft: Self.draft, origin: Self.erin, idempotency: nil) }
        #expect(b.hub.head == 0)
        let runningB = Task { try await b.run() }
        defer { runningB.cancel() }
        try await eventually("b's head moves to a's commits") { b.hub.head == 5 }
        #expect(b.hub.recentChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100) == nil)
        // A subscriber still reads every change, from the table.
        #expect(try await b.readChanges(after: 0, filter: FeedFilter(user: "erin", topics: [.item]), limit: 100).changes.map(\.seq) == Array(1...5))
        for running in [runningA, runningB] {
            running.cancel()
            _ = await running.result
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func withoutNotificationsThePollDelivers() async throws {
        try await withDaemons(2, pollInterval: .milliseconds(200), listens: false) { daemons, _ in
            let (a, b) = (daemons[0], daemons[1])
            let subscription = b.hub.subscribe(FeedFilter(user: "erin", topics: [.item]))
            defer { subscription.cancel() }
            let woken = Task { await subscription.wait(timeout: .seconds(30)) }
            try await eventually("the wait is parked") { subscription.isWaiting }
            _ = try await a.createItem(id: nil, draft: Self.draft, origin: Self.erin, idempotency: nil)
            #expect(await woken.value == true)
            #expect(b.hub.head == 1)
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aRevocationOnOneDaemonReachesTheOthersTokenGeneration() async throws {
        try await withDaemons(2, pollInterval: .seconds(60)) { daemons, _ in
            let (a, b) = (daemons[0], daemons[1])
            try await eventually("both daemons listen") { a.isListening && b.isListening }
            let token = try await a.createToken(user: "erin", role: .editor)
            #expect(try await b.authenticate(secret: token.secret)?.id == token.info.id)
            let before = b.hub.tokenGeneration
            #expect(try await a.revokeToken(id: token.info.id))
            try await eventually("b saw the new token generation") { b.hub.tokenGeneration > before }
            #expect(try await b.authenticate(secret: token.secret) == nil)
            #expect(try await !b.isLiveToken(id: token.info.id))
        }
    }

    /// The log's order across daemons: 3 daemons, 24 concurrent writers, a fifth of the writes
    /// rolled back after they took their seqs, one writer's backend terminated while it holds the
    /// head; readers on every daemon follow the table the whole time. No reader ever sees a seq
    /// before every smaller one, the log ends as 1...head with no hole, and every acknowledged
    /// write is in it, exactly once.
    @Test(.timeLimit(.minutes(10)))
    func theLogIsInCommitOrderOnEveryDaemonWhateverWritersDo() async throws {
        struct RolledBack: Error {}
        try await withDaemons(3, pollInterval: .milliseconds(200), maximumConnections: 12) { daemons, url in
            let writing = Shared(true)
            let violations = Shared<[String]>([])
            // Readers: each follows the whole log from the table, checking contiguity page by page.
            let readers = daemons.enumerated().map { index, daemon in
                Task {
                    var cursor: Int64 = 0
                    var pages = 0
                    while !Task.isCancelled {
                        let page: FeedPage
                        do {
                            if !writing.value, try await cursor >= daemon.logStatistics().entries { break }
                            page = try await daemon.readLoggedChanges(after: cursor, filter: nil, limit: 50)
                        } catch StoreError.unavailable {
                            // The pool was busy past the deadline (the writers queue behind the stalled one).
                            try await Task.sleep(for: .milliseconds(10))
                            continue
                        }
                        let seqs = page.changes.map(\.seq)
                        if !seqs.isEmpty, seqs != Array((cursor + 1)...(cursor + Int64(seqs.count))) {
                            violations.withLock { $0.append("reader \(index) after \(cursor) saw \(seqs)") }
                        }
                        if page.cursor.seq < cursor + Int64(seqs.count) {
                            violations.withLock { $0.append("reader \(index): cursor \(page.cursor.seq) behind its entries") }
                        }
                        cursor = max(cursor, page.cursor.seq)
                        pages += 1
                        if seqs.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
                    }
                    return (cursor, pages)
                }
            }
            defer {
                writing.set(false)
                readers.forEach { $0.cancel() }
            }
            // Writers: each write's id is chosen here, so that every attempt can be found in the
            // log or not. A write refused as unavailable (a lock or lease waited past the deadline
            // while the stalled writer held the head) may not be there; an acknowledged one must.
            let acknowledged = Shared<[String]>([])
            let refused = Shared<[String]>([])
            let rolledBack = Shared<[String]>([])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<24 {
                    let daemon = daemons[writer % 3]
                    group.addTask {
                        var generator = SplitMix64(seed: UInt64(writer) &+ 1)
                        for _ in 0..<15 {
                            let rollBack = generator.next() % 5 == 0
                            let id = ItemID.random()
                            do {
                                _ = try await daemon.write { write in
                                    _ = try await WriteRules.createItem(write, id: id, draft: Self.draft, origin: Self.erin)
                                    try await write.appendLog()
                                    if rollBack { throw RolledBack() }
                                }
                                acknowledged.withLock { $0.append(id.description) }
                            } catch is RolledBack {
                                rolledBack.withLock { $0.append(id.description) }
                            } catch StoreError.unavailable {
                                refused.withLock { $0.append(id.description) }
                            }
                        }
                    }
                }
                // One more writer takes the head and stalls holding it; its backend is terminated.
                group.addTask {
                    do {
                        _ = try await daemons[0].write { write in
                            _ = try await WriteRules.createItem(write, id: nil, draft: Self.draft, origin: Self.erin)
                            try await write.appendLog()
                            try await write.query("SELECT pg_sleep(30)")
                        }
                        violations.withLock { $0.append("the stalled writer committed") }
                    } catch {}
                }
                group.addTask {
                    try await withConnection(url) { connection in
                        try await eventually("the stalled writer holds the head") {
                            try await !connection.values(
                                "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND datname = current_database()",
                                as: Int32.self
                            ).isEmpty
                        }
                        let killed = try await connection.values(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND datname = current_database()",
                            as: Bool.self)
                        #expect(killed == [true])
                    }
                }
                try await group.waitForAll()
            }
            writing.set(false)
            var cursors: [Int64] = []
            for reader in readers { cursors.append(try await reader.value.0) }

            #expect(violations.withLock { $0 } == [])
            let ids = acknowledged.value
            let (head, logged) = try await withConnection(url) { connection in
                (
                    try await connection.values("SELECT seq FROM log_head", as: Int64.self)[0],
                    try await connection.values("SELECT seq FROM changes ORDER BY seq", as: Int64.self)
                )
            }
            #expect(logged == Array(1...head), "the log is 1...head with no hole")
            let loggedIDs = try await daemons[1].readLoggedChanges(after: 0, filter: nil, limit: 10_000).changes.map(\.id)
            #expect(loggedIDs.count == Set(loggedIDs).count, "no write is logged twice")
            #expect(Set(ids).isSubset(of: Set(loggedIDs)), "every acknowledged write is in the log")
            #expect(Set(loggedIDs).isSubset(of: Set(ids).union(refused.value)), "nothing rolled back or unknown is in the log")
            #expect(Set(loggedIDs).isDisjoint(with: Set(rolledBack.value)))
            #expect(!rolledBack.value.isEmpty && ids.count > 200)
            #expect(cursors.allSatisfy { $0 == head })
            for daemon in daemons {
                try await eventually("every hub reaches the head") { daemon.hub.head == head }
            }
        }
    }
}

/// A value several tasks share.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    var value: Value { mutex.withLock { $0 } }
    func set(_ value: Value) { mutex.withLock { $0 = value } }
    func withLock<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}
