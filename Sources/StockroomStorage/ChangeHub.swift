import Foundation
import StockroomWire
import Synchronization

/// The observation layer: reads each commit's new change entries once, from the commit itself,
/// keeps the most recent ones in memory (already encoded), and wakes exactly the subscribers whose
/// filter they touch. A wake-up carries no data: a subscriber asks for the changes past its own
/// cursor, served from memory when they are recent and from the log otherwise, so a coalesced or
/// missed wake-up cannot lose an entry, and N subscribers cost one read per commit, not N.
public final class ChangeHub: Sendable {
    /// How many recent entries are kept in memory.
    package static let recentCapacity = 4096

    /// A subscription and what it sees now (a WebSocket may change its item filter).
    fileprivate struct Subscriber {
        let subscription: FeedSubscription
        var filter: FeedFilter
    }

    fileprivate struct State {
        var head: Int64
        /// Entries with contiguous seqs ending at `head` (possibly none).
        var recent: [ChangeEntry] = []
        var trimmedThrough: Int64
        /// Subscribers without an item filter, checked for every entry.
        var subscribers: [ObjectIdentifier: Subscriber] = [:]
        /// Subscribers with an item filter: an item entry reaches them through `index` (the
        /// filters its item may match before or after the change); other entries are checked.
        var filtered: [ObjectIdentifier: Subscriber] = [:]
        var index = FilterIndex<ObjectIdentifier>()
        var tokenGeneration: Int64 = 0
        /// While a group committer answers a batch's writers, wake-ups wait here (see `holdWakes`):
        /// the holds not yet released, and the subscribers woken meanwhile.
        var holds = 0
        var held: [FeedSubscription] = []
    }

    private let state: Mutex<State>
    /// The database epoch, named in every cursor.
    package let epoch: String

    package init(head: Int64, trimmedThrough: Int64, epoch: String) {
        state = Mutex(State(head: head, trimmedThrough: trimmedThrough))
        self.epoch = epoch
    }

    /// The newest committed seq.
    public var head: Int64 { state.withLock { $0.head } }

    /// How many subscriptions are open now.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count + $0.filtered.count } }

    /// Registers a subscriber; call before its first read so that no commit slips between the two.
    public func subscribe(_ filter: FeedFilter) -> FeedSubscription {
        let subscription = FeedSubscription(filter: filter, hub: self)
        state.withLock { state in
            subscription.unchecked(through: state.head)
            state.add(Subscriber(subscription: subscription, filter: filter))
        }
        return subscription
    }

    /// Changes what `subscription` is woken for; call before reading under the new filter, so that
    /// no commit slips between the two.
    public func change(_ subscription: FeedSubscription, to filter: FeedFilter) {
        state.withLock { state in
            state.remove(ObjectIdentifier(subscription))
            // The entries so far were checked against the old filter.
            subscription.unchecked(through: state.head)
            state.add(Subscriber(subscription: subscription, filter: filter))
        }
    }

    package func remove(_ subscription: FeedSubscription) {
        state.withLock { $0.remove(ObjectIdentifier(subscription)) }
    }

    /// Called after a commit with the entries it appended, in seq order: they are readable at
    /// once, and the subscribers they concern are woken now, or once the batch's writers are
    /// answered when the commit is a group commit's (`holdingWakes`).
    ///
    /// The hub holds the log's entries up to `head` with no gap, so it takes only what continues
    /// it: entries at or below `head` (already published, by a commit or a catch-up read that
    /// overtook this call) are skipped, and entries that would leave a gap after `head` are
    /// refused (false): the caller reads the gap from the log first. Entries must be contiguous.
    @discardableResult
    package func committed(_ entries: [ChangeEntry]) -> Bool {
        let woken = state.withLock { state -> [FeedSubscription]? in
            guard let start = entries.firstIndex(where: { $0.seq > state.head }) else { return [] }
            var entries = entries[start...]
            guard entries.first!.seq == state.head + 1 else { return nil }
            // While filtered feeds are open, each item entry kept gets a place for its decoded
            // items, so that they are decoded once for every filter (none otherwise: no cost).
            if !state.filtered.isEmpty {
                for index in entries.indices where entries[index].entity == .item { entries[index].items = DecodedItems() }
            }
            state.recent.append(contentsOf: entries)
            if state.recent.count > 2 * Self.recentCapacity { state.recent.removeFirst(state.recent.count - Self.recentCapacity) }
            state.head = entries.last!.seq
            let woken = state.woken(by: entries)
            guard state.holds == 0 else {
                state.held.append(contentsOf: woken)
                return []
            }
            return woken
        }
        guard let woken else { return false }
        for subscriber in woken { subscriber.notify() }
        return true
    }

    /// Publishes the last entries of a commit too large to keep in memory (an import): memory
    /// restarts at `entries` (what came before them is read from the log), and every subscriber is
    /// woken, since which ones the skipped entries concern is not known here.
    package func committed(tail entries: [ChangeEntry]) {
        guard let last = entries.last else { return }
        restart(at: last.seq, with: entries)
    }

    /// Memory restarts at `entries`, which end at `head` (none: memory is empty there), when
    /// `head` is past the hub's, and every subscriber is woken (held while the committer answers).
    private func restart(at head: Int64, with entries: [ChangeEntry]) {
        let woken = state.withLock { state -> [FeedSubscription] in
            guard head > state.head else { return [] }
            var entries = entries
            if !state.filtered.isEmpty {
                for index in entries.indices where entries[index].entity == .item { entries[index].items = DecodedItems() }
            }
            state.recent = entries
            state.head = head
            let all = state.all
            for subscriber in all { subscriber.unchecked(through: head) }
            guard state.holds == 0 else {
                state.held.append(contentsOf: all)
                return []
            }
            return all
        }
        for subscriber in woken { subscriber.notify() }
    }

    /// Whether no subscription is open: nothing here reads the entries a commit brings, so a
    /// process that follows a shared log may move the head without reading them (`skipped(to:)`).
    package var isIdle: Bool { state.withLock { $0.subscribers.isEmpty && $0.filtered.isEmpty } }

    /// Moves the head to `seq`, a position committed with everything before it, without its
    /// entries: memory restarts empty there (what came before is read from the log), and every
    /// subscriber, one that subscribed since `isIdle` said none had, is woken to read it.
    package func skipped(to seq: Int64) {
        restart(at: seq, with: [])
    }

    /// Runs `body` (a group commit: apply, commit, answer each writer) with the wake-ups of its
    /// commit held back until it returns (`holdWakes`, then `releaseWakes`).
    package func holdingWakes(_ body: () -> Void) {
        holdWakes()
        body()
        releaseWakes()
    }

    /// From now until the matching `releaseWakes`, the subscribers a commit concerns are woken only
    /// then: its entries are readable at once, but each woken subscriber costs its transport a task
    /// switch and a socket write, and held they queue behind the writers' answers instead of ahead
    /// of them, so a thousand subscribers do not delay the answer of the write they are told about.
    /// Holds may overlap: the wake-ups wait until every hold is released.
    package func holdWakes() {
        state.withLock { $0.holds += 1 }
    }

    /// Ends a hold of `holdWakes`; the last one wakes the subscribers held meanwhile.
    package func releaseWakes() {
        let held = state.withLock { state -> [FeedSubscription] in
            precondition(state.holds > 0, "releaseWakes without holdWakes")
            state.holds -= 1
            guard state.holds == 0 else { return [] }
            defer { state.held = [] }
            return state.held
        }
        for subscriber in held { subscriber.notify() }
    }

    /// Where `subscription`'s stream, standing at `seq`, may read on from instead when the log no
    /// longer holds the entries after `seq`: the hub checked each entry it published against the
    /// subscription's filter, so it knows when none of them concerned it (nil: one may have).
    /// A stream whose filter hid every write while the log was trimmed past it goes on.
    public func unconcerned(_ subscription: FeedSubscription, after seq: Int64) -> Int64? {
        state.withLock { state in subscription.unconcerned(after: seq, head: state.head) }
    }

    /// The newest trim watermark this process made or saw: entries up to it are gone.
    package var trimmedThrough: Int64 { state.withLock { $0.trimmedThrough } }

    /// Records that the log was trimmed through `seq`: cursors before it must resync.
    package func trimmed(through seq: Int64) {
        state.withLock { $0.trimmedThrough = max($0.trimmedThrough, seq) }
    }

    /// Up to `limit` visible changes after `seq` from memory, or nil when memory does not reach back
    /// to `seq` (or `seq` is trimmed or beyond the head: the log then decides).
    public func recentChanges(after seq: Int64, filter: FeedFilter, limit: Int) -> FeedPage? {
        state.withLock { state -> FeedPage? in
            guard let start = state.recentIndex(after: seq) else { return nil }
            var page = FeedPageBuilder(after: seq, filter: filter, limit: limit)
            for entry in state.recent[start...] where !page.offer(entry) { break }
            return page.page(epoch: epoch, head: state.head)
        }
    }

    /// A live delivery without a page: calls `body` with each change after `seq` that a filter
    /// without an item filter shows, in order, where the hub keeps it (under its lock: no entry is
    /// copied and no `FeedPage` built; keep `body` short), and returns the last one's seq and the
    /// cursor past them, the head. Nil, before any call of `body`, where `recentChanges` would not
    /// answer a complete page: memory does not reach back to `seq`, `filter` has an item filter, or
    /// the changes are more than `limit` or pass the byte budget (`FeedPage.byteBudget`).
    package func forEachRecentChange(
        after seq: Int64, filter: FeedFilter, limit: Int, _ body: (ChangeEntry) -> Void
    ) -> (last: Int64?, cursor: FeedCursor)? {
        guard filter.items == nil else { return nil }
        return state.withLock { state -> (last: Int64?, cursor: FeedCursor)? in
            guard let start = state.recentIndex(after: seq) else { return nil }
            let cursor = FeedCursor(epoch: epoch, seq: state.head)
            // Through the buffer each entry is read where it lies. The first pass checks that the
            // changes make a complete page (`FeedPageBuilder`'s rule), the second hands them out.
            return state.recent.withUnsafeBufferPointer { recent -> (last: Int64?, cursor: FeedCursor)? in
                var count = 0
                var bytes = 0
                for index in start..<recent.count where filter.sees(entity: recent[index].entity, owner: recent[index].owner) {
                    let size = recent[index].json.utf8.count
                    guard FeedPageBuilder.takes(size, after: count, bytes: bytes, limit: limit) else { return nil }
                    count += 1
                    bytes += size
                }
                var last: Int64?
                for index in start..<recent.count where filter.sees(entity: recent[index].entity, owner: recent[index].owner) {
                    body(recent[index])
                    last = recent[index].seq
                }
                return (last, cursor)
            }
        }
    }

    /// The newest token generation seen (see `AppDatabase.tokenGeneration`): every revocation, by
    /// this process or another, bumps it. Streams re-check their token when it moves.
    public var tokenGeneration: Int64 { state.withLock { $0.tokenGeneration } }

    /// Records the token generation read after a commit; when it moved, wakes every subscriber so
    /// that each re-checks its token before it delivers anything more.
    package func observeTokenGeneration(_ generation: Int64) {
        let subscribers: [FeedSubscription] = state.withLock { state in
            guard generation > state.tokenGeneration else { return [] }
            state.tokenGeneration = generation
            return state.all
        }
        for subscriber in subscribers { subscriber.notify() }
    }

    /// Ends every subscription (graceful shutdown).
    public func closeAll() {
        let subscribers = state.withLock { $0.all }
        for subscriber in subscribers { subscriber.close() }
    }
}

extension ChangeHub.State {
    /// Where the entries after `seq` start in `recent` (its end when `seq` is the head), or nil
    /// when memory does not answer for `seq`: trimmed, past the head, or before what it keeps.
    func recentIndex(after seq: Int64) -> Int? {
        guard seq >= trimmedThrough, seq <= head else { return nil }
        guard seq < head else { return recent.count }
        guard !recent.isEmpty, recent[0].seq <= seq + 1 else { return nil }
        return Int(seq + 1 - recent[0].seq)
    }

    var all: [FeedSubscription] { subscribers.values.map(\.subscription) + filtered.values.map(\.subscription) }

    mutating func add(_ subscriber: ChangeHub.Subscriber) {
        let key = ObjectIdentifier(subscriber.subscription)
        if let items = subscriber.filter.items {
            filtered[key] = subscriber
            index.insert(items, for: key)
        } else {
            subscribers[key] = subscriber
        }
    }

    mutating func remove(_ key: ObjectIdentifier) {
        if subscribers.removeValue(forKey: key) == nil, filtered.removeValue(forKey: key) != nil {
            index.remove(key)
        }
    }

    /// The subscribers that `entries` concern, each told where (`FeedSubscription.concerned`).
    /// Under an item filter, an item entry is checked only against the filters the index names
    /// for its item before and after the change: a write costs what the filters it may match
    /// cost, not one check per open filter.
    func woken(by entries: ArraySlice<ChangeEntry>) -> [FeedSubscription] {
        var woken: [FeedSubscription] = []
        let last = entries.last!.seq
        // Without an item filter, what a filter shows is what its topics see.
        for subscriber in subscribers.values {
            guard let first = entries.firstIndex(where: { subscriber.filter.sees(entity: $0.entity, owner: $0.owner) }) else { continue }
            subscriber.subscription.concerned(from: entries[first].seq, through: last)
            woken.append(subscriber.subscription)
        }
        guard !filtered.isEmpty else { return woken }
        var candidates: Set<ObjectIdentifier> = []
        var checkAll = false
        for entry in entries {
            guard entry.entity == .item else {
                checkAll = true
                continue
            }
            let decoded = entry.decodedItems
            if decoded.beforeUnknown {
                checkAll = true
                continue
            }
            if let after = decoded.after { candidates.formUnion(index.candidates(for: after)) }
            if let before = decoded.before { candidates.formUnion(index.candidates(for: before)) }
        }
        let checked: [ChangeHub.Subscriber] = checkAll ? Array(filtered.values) : candidates.compactMap { filtered[$0] }
        for subscriber in checked {
            guard let first = entries.firstIndex(where: { subscriber.filter.shown($0) != nil }) else { continue }
            subscriber.subscription.concerned(from: entries[first].seq, through: last)
            woken.append(subscriber.subscription)
        }
        return woken
    }
}
