import Foundation
import GRDB
import StockroomCore
import StockroomWire
import Synchronization

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// Which changes a feed subscriber may see: items for everyone, navigation for its owner only.
public struct FeedFilter: Hashable, Sendable {
    /// The subscriber's user.
    public var user: UserID
    /// The topics it follows.
    public var topics: Set<ChangeEntity>

    /// Creates a filter.
    public init(user: UserID, topics: Set<ChangeEntity>) {
        self.user = user
        self.topics = topics
    }

    /// Whether a change of `entity` owned by `owner` passes the filter.
    public func sees(entity: ChangeEntity, owner: UserID?) -> Bool {
        switch entity {
        case .item: topics.contains(.item)
        case .navigation: topics.contains(.navigation) && owner == user
        }
    }
}

/// The observation layer: reads each commit's new change entries once, from the commit itself,
/// keeps the most recent ones in memory (already encoded), and wakes exactly the subscribers whose
/// filter they touch. A wake-up carries no data: a subscriber asks for the changes past its own
/// cursor, served from memory when they are recent and from the log otherwise, so a coalesced or
/// missed wake-up cannot lose an entry, and N subscribers cost one read per commit, not N.
public final class ChangeHub: Sendable {
    /// How many recent entries are kept in memory.
    static let recentCapacity = 4096

    private struct State {
        var head: Int64
        /// Entries with contiguous seqs ending at `head` (possibly none).
        var recent: [ChangeEntry] = []
        var trimmedThrough: Int64
        var subscribers: [ObjectIdentifier: FeedSubscription] = [:]
        var tokenGeneration: Int64 = 0
        /// While the group committer answers a batch's writers, wake-ups wait here (see `holdingWakes`).
        var holding = false
        var held: [FeedSubscription] = []
    }

    private let state: Mutex<State>
    /// The database epoch, named in every cursor.
    let epoch: String

    init(head: Int64, trimmedThrough: Int64, epoch: String) {
        state = Mutex(State(head: head, trimmedThrough: trimmedThrough))
        self.epoch = epoch
    }

    /// The newest committed seq.
    public var head: Int64 { state.withLock { $0.head } }

    /// How many subscriptions are open now.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Registers a subscriber; call before its first read so that no commit slips between the two.
    public func subscribe(_ filter: FeedFilter) -> FeedSubscription {
        let subscription = FeedSubscription(filter: filter, hub: self)
        state.withLock { $0.subscribers[ObjectIdentifier(subscription)] = subscription }
        return subscription
    }

    func remove(_ subscription: FeedSubscription) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: ObjectIdentifier(subscription)) }
    }

    /// Called after a commit with the entries it appended, in seq order: they are readable at
    /// once, and the subscribers they concern are woken now, or once the batch's writers are
    /// answered when the commit is a group commit's (`holdingWakes`).
    func committed(_ entries: [ChangeEntry]) {
        guard let last = entries.last else { return }
        let woken = state.withLock { state -> [FeedSubscription] in
            if let first = entries.first, first.seq != state.head + 1 { state.recent.removeAll() }
            state.recent.append(contentsOf: entries)
            if state.recent.count > 2 * Self.recentCapacity { state.recent.removeFirst(state.recent.count - Self.recentCapacity) }
            state.head = max(state.head, last.seq)
            let woken = state.subscribers.values.filter { subscriber in
                entries.contains { subscriber.filter.sees(entity: $0.entity, owner: $0.owner) }
            }
            guard !state.holding else {
                state.held.append(contentsOf: woken)
                return []
            }
            return woken
        }
        for subscriber in woken { subscriber.notify() }
    }

    /// Runs `body` (a group commit: apply, commit, answer each writer) with the wake-ups of its
    /// commit held back until it returns. Each woken subscriber costs its transport a task switch
    /// and a socket write; held, they queue behind the writers' answers instead of ahead of them,
    /// so a thousand subscribers do not delay the answer of the write they are told about.
    /// Only the writer's serial queue calls it, so holds never nest.
    func holdingWakes(_ body: () -> Void) {
        state.withLock { $0.holding = true }
        body()
        let held = state.withLock { state in
            state.holding = false
            defer { state.held = [] }
            return state.held
        }
        for subscriber in held { subscriber.notify() }
    }

    /// The newest trim watermark this process made or saw: entries up to it are gone.
    var trimmedThrough: Int64 { state.withLock { $0.trimmedThrough } }

    /// Records that the log was trimmed through `seq`: cursors before it must resync.
    func trimmed(through seq: Int64) {
        state.withLock { $0.trimmedThrough = max($0.trimmedThrough, seq) }
    }

    /// Up to `limit` visible changes after `seq` from memory, or nil when memory does not reach back
    /// to `seq` (or `seq` is trimmed or beyond the head: the log then decides).
    public func recentChanges(after seq: Int64, filter: FeedFilter, limit: Int) -> FeedPage? {
        state.withLock { state -> FeedPage? in
            guard seq >= state.trimmedThrough, seq <= state.head else { return nil }
            if seq < state.head {
                guard let first = state.recent.first, first.seq <= seq + 1 else { return nil }
            }
            var changes: [ChangeEntry] = []
            var hasMore = false
            if let first = state.recent.first, seq < state.head {
                var bytes = 0
                for entry in state.recent[Int(seq + 1 - first.seq)...] where filter.sees(entity: entry.entity, owner: entry.owner) {
                    bytes += entry.json.utf8.count
                    if changes.count == limit || (!changes.isEmpty && bytes > FeedPage.byteBudget) {
                        hasMore = true
                        break
                    }
                    changes.append(entry)
                }
            }
            let position = hasMore ? (changes.last?.seq ?? seq) : state.head
            return FeedPage(changes: changes, cursor: FeedCursor(epoch: epoch, seq: position), hasMore: hasMore)
        }
    }

    /// The newest token generation seen (see `AppDatabase.tokenGeneration`): every revocation, by
    /// this process or another, bumps it. Streams re-check their token when it moves.
    public var tokenGeneration: Int64 { state.withLock { $0.tokenGeneration } }

    /// Records the token generation read after a commit; when it moved, wakes every subscriber so
    /// that each re-checks its token before it delivers anything more.
    func observeTokenGeneration(_ generation: Int64) {
        let subscribers: [FeedSubscription] = state.withLock { state in
            guard generation > state.tokenGeneration else { return [] }
            state.tokenGeneration = generation
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.notify() }
    }

    /// Ends every subscription (graceful shutdown).
    public func closeAll() {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.close() }
    }
}

/// One subscriber's wake-up signal: at most one pending notification (bounded, never blocks a writer).
public final class FeedSubscription: Sendable {
    private struct State {
        var pending = false
        var closed = false
        var waiter: (id: Int, wake: Wake, deadline: ContinuousClock.Instant?)?
        var nextWaitID = 0
        var expiredWaitID = -1
    }

    /// Whom a wait wakes: a suspended task, or a parked stream's callback (see `park(until:onWake:)`).
    private enum Wake {
        case continuation(CheckedContinuation<Bool, Never>)
        case callback(@Sendable (Bool) -> Void)

        func callAsFunction(_ woke: Bool) {
            switch self {
            case .continuation(let continuation): continuation.resume(returning: woke)
            case .callback(let callback): callback(woke)
            }
        }
    }

    /// What the subscriber may see.
    public let filter: FeedFilter
    private let state = Mutex(State())
    private let hub: ChangeHub

    init(filter: FeedFilter, hub: ChangeHub) {
        self.filter = filter
        self.hub = hub
    }

    /// Whether the subscription was closed by the hub.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Whether a wait is parked now (for tests).
    var isWaiting: Bool { state.withLock { $0.waiter != nil } }

    /// Unregisters the subscription and ends any wait.
    public func cancel() {
        hub.remove(self)
        close()
    }

    func notify() {
        let wake: Wake? = state.withLock { state in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter.wake
        }
        wake?(true)
    }

    func close() {
        let wake: Wake? = state.withLock { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter?.wake
        }
        wake?(false)
    }

    /// Waits until a relevant commit (true), or until `timeout` passes, the task is cancelled
    /// or the subscription closes (false). Starts a timer task for the timeout: for one-off waits
    /// (a long-poll); a stream waits with `wait(until:)`, which costs no task.
    public func wait(timeout: Duration) async -> Bool {
        guard let id = beginWait() else { return true }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.expire(id)
        }
        defer { timer.cancel() }
        return await suspend(id, deadline: nil)
    }

    /// Waits until a relevant commit (true), or until the task is cancelled, the subscription
    /// closes or `expireWait(ifDueBy:)` is called at or after `deadline` (false). Keeps no time of
    /// its own: whoever calls `expireWait` does, one sweep for every stream instead of a timer each.
    public func wait(until deadline: ContinuousClock.Instant) async -> Bool {
        guard let id = beginWait() else { return true }
        return await suspend(id, deadline: deadline)
    }

    /// Ends the wait in progress, if any, when its deadline is at or before `now`.
    public func expireWait(ifDueBy now: ContinuousClock.Instant) {
        let wake: Wake? = state.withLock { state in
            guard let waiter = state.waiter, let deadline = waiter.deadline, deadline <= now else { return nil }
            state.waiter = nil
            return waiter.wake
        }
        wake?(false)
    }

    /// `wait(until:)` without a task: returns at once what the wait would return without suspending
    /// (true: a notification was pending; false: the subscription is closed), or nil once it has
    /// stored `onWake`, which is then called exactly once, from whichever thread ends the wait, with
    /// what `wait(until:)` would have returned. A stream parked this way holds no task while idle.
    public func park(until deadline: ContinuousClock.Instant, onWake: @escaping @Sendable (Bool) -> Void) -> Bool? {
        state.withLock { state -> Bool? in
            if state.pending {
                state.pending = false
                return true
            }
            if state.closed { return false }
            state.nextWaitID += 1
            state.waiter = (state.nextWaitID, .callback(onWake), deadline)
            return nil
        }
    }

    /// Takes a pending notification (nil: no need to wait) or numbers a new wait.
    private func beginWait() -> Int? {
        state.withLock { state in
            if state.pending {
                state.pending = false
                return nil
            }
            state.nextWaitID += 1
            return state.nextWaitID
        }
    }

    private func suspend(_ id: Int, deadline: ContinuousClock.Instant?) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate: Bool? = state.withLock { state in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    if state.closed || state.expiredWaitID == id || Task.isCancelled { return false }
                    state.waiter = (id, .continuation(continuation), deadline)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            expire(id)
        }
    }

    private func expire(_ id: Int) {
        let wake: Wake? = state.withLock { state in
            state.expiredWaitID = max(state.expiredWaitID, id)
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            return waiter.wake
        }
        wake?(false)
    }
}

/// Watches commits on the writer connection and tells the hub about the change entries they
/// appended and about tokens they revoked or removed (the token generation they moved).
final class ChangeObserver: TransactionObserver, Sendable {
    private struct Touched {
        var changes = false
        var tokens = false
        /// What `prepareCommit` read inside the transaction, for its commit to publish.
        var prepared: Committed?
    }

    /// A commit's new entries (empty when it appended none) and the token generation after it.
    private struct Committed {
        var entries: [ChangeEntry]
        var tokenGeneration: Int64
    }

    /// The token generation after this connection's last commit, and SQLite's data version of the
    /// database file then.
    private struct Known {
        var dataVersion: UInt32
        var tokenGeneration: Int64
    }

    private let hub: ChangeHub
    // Only touched on the writer's serial queue; the Mutex makes that checkable by the compiler.
    private let touched = Mutex(Touched())
    private let known = Mutex<Known?>(nil)

    init(hub: ChangeHub) {
        self.hub = hub
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        if case .insert(let table) = eventKind, table == ChangeRecord.databaseTableName { return true }
        return eventKind.tableName == TokenRecord.databaseTableName
    }

    func databaseDidChange(with event: DatabaseEvent) {
        let both = touched.withLock { touched in
            if event.tableName == TokenRecord.databaseTableName { touched.tokens = true } else { touched.changes = true }
            return touched.changes && touched.tokens
        }
        if both { stopObservingDatabaseChangesUntilNextTransaction() }
    }

    /// Reads what the commit will publish while its transaction is still open, just before COMMIT
    /// (the group committer calls it). Read after the commit, each statement would be a read
    /// transaction of its own on the WAL: its locks and its shared-memory reads, on the path of
    /// every write's answer. The write lock is held from BEGIN IMMEDIATE to COMMIT, so no other
    /// process can commit in between: the token generation read here is the one after the commit.
    func prepareCommit(_ db: Database) {
        let touched = touched.withLock { $0 }
        guard touched.changes || touched.tokens else { return }
        // On failure nothing is prepared, and the commit reads as it would have.
        let committed = try? read(db, changes: touched.changes, tokens: touched.tokens)
        self.touched.withLock { $0.prepared = committed }
    }

    func databaseDidCommit(_ db: Database) {
        let touched = touched.withLock { touched in
            defer { touched = Touched() }
            return touched
        }
        guard touched.changes || touched.tokens else { return }
        do {
            // A commit not made by the group committer (or whose prepared read failed) reads now.
            let committed = try touched.prepared ?? read(db, changes: touched.changes, tokens: touched.tokens)
            known.withLock { known in
                known = Self.dataVersion(db).map { Known(dataVersion: $0, tokenGeneration: committed.tokenGeneration) }
            }
            // Read in the same commit's wake: a token this commit revoked or removed is refused from
            // the next request on, and a revocation committed by any process before these entries is
            // seen before they are delivered (streams re-check their token first). Other processes'
            // revocations without a commit here: `AppDatabase.observeTokenRevocations`.
            hub.observeTokenGeneration(committed.tokenGeneration)
            if touched.changes { hub.committed(committed.entries) }
        } catch {
            // Subscribers still read the log by cursor; the next commit or heartbeat catches them up.
        }
    }

    /// The one read of each commit's entries that every subscriber shares, and the token generation.
    private func read(_ db: Database, changes: Bool, tokens: Bool) throws -> Committed {
        // A cached statement, not the query interface (which prepares its statement anew): every commit runs it.
        let entries = changes
            ? try db.cachedStatement(sql: Self.newEntriesSQL).readRows(binding: { $0.bind(hub.head) }) { try ChangeRecord(current: $0) }.map { ChangeEntry($0, epoch: hub.epoch) }
            : []
        return Committed(entries: entries, tokenGeneration: try tokenGeneration(db, tokens: tokens))
    }

    /// The token generation as this transaction sees it. Read from the database only when it may have
    /// moved: this transaction touched `tokens`, or some other connection committed since this one's
    /// last commit (SQLite's data version of the file moved): a value that changes only when a token
    /// is revoked is not read on every commit.
    private func tokenGeneration(_ db: Database, tokens: Bool) throws -> Int64 {
        if !tokens, let known = known.withLock({ $0 }), Self.dataVersion(db) == known.dataVersion {
            return known.tokenGeneration
        }
        return try AppDatabase.tokenGeneration(db)
    }

    /// SQLite's data version of the main database file on this connection (`SQLITE_FCNTL_DATA_VERSION`):
    /// it moves with each commit of this connection, and when a transaction begins after another
    /// connection (or process) committed; nil when SQLite does not say.
    static func dataVersion(_ db: Database) -> UInt32? {
        var version: UInt32 = 0
        guard sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_DATA_VERSION, &version) == SQLITE_OK else { return nil }
        return version
    }

    private static let newEntriesSQL =
        ChangeRecord.selectSQL + " WHERE \(ChangeRecord.Columns.seq.name) > ? ORDER BY \(ChangeRecord.Columns.seq.name)"

    func databaseDidRollback(_ db: Database) {
        touched.withLock { $0 = Touched() }
        known.withLock { $0 = nil }
    }
}
