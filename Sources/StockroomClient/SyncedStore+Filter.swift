// Following part of the inventory: the store's feed under its item filter, and the filter changed in place.

extension SyncedStore {
    /// Follows the feed from `start` under the store's filter, in place of any feed it followed.
    func follow(from start: FeedStart) {
        feedTask?.cancel()
        var feedOptions = options.feed
        feedOptions.filter = filter
        // The store's own stream marks its device online.
        if feedOptions.clientID == nil { feedOptions.clientID = clientID }
        let feed = client.feed(from: start, options: feedOptions)
        let task = Task { [weak self] in
            do {
                // Whatever has come at once is applied at once (a catch-up, a busy feed).
                var events = feed.makeAsyncIterator()
                while let batch = try await events.nextBatch() {
                    guard let self, !Task.isCancelled else { return }
                    self.apply(contentsOf: batch)
                }
            } catch let error as StockroomError {
                self?.connection = .failed(error)
            } catch {
                // Cancelled: stopped.
            }
        }
        feedTask = task
        tasks.add(task)
    }

    /// Follows `new` (nil: every item) instead of the store's filter, without a refetch: the server
    /// sends what the store lacks under `new` and the ids it no longer follows (``StockroomClient/refilter(from:to:since:)``),
    /// the changes of the store's other topics (navigation, presence) up to the same cursor are
    /// read beside it, and the feed goes on from there. Before the first snapshot, or after a `410`,
    /// the store reloads under `new` from a snapshot instead. A store stopped meanwhile stays stopped.
    public func setFilter(_ new: ItemFilter?) async throws {
        guard new != filter else { return }
        let old = filter
        guard isLoaded, let since = cursor, feedTask != nil else {
            filter = new
            if feedTask != nil { follow(from: .snapshot) }
            return
        }
        feedTask?.cancel()
        feedTask = nil
        let delta: FilterDelta
        let others: [Change]
        do {
            delta = try await client.refilter(from: old, to: new, since: since)
            others = try await changesBesideItems(after: since, through: delta.cursor)
        } catch let error as StockroomError where error.code == .resyncRequired {
            guard !stopped else { return }
            filter = new
            follow(from: .snapshot)
            return
        } catch {
            // Not changed: the feed goes on under the old filter.
            if !stopped { follow(from: .after(since)) }
            throw error
        }
        guard !stopped else { return }
        filter = new
        for change in others { apply(change) }
        for id in delta.removed { confirmDeparture(of: id) }
        for item in delta.items {
            departed.remove(item.id)
            confirm(item)
        }
        cursor = delta.cursor
        rebase()
        follow(from: .after(delta.cursor))
    }

    /// The changes of the store's feed topics other than items after `since`, up to `end`: what a
    /// refilter's delta (items only) leaves out between the store's cursor and its own.
    private func changesBesideItems(after since: FeedCursor, through end: FeedCursor) async throws -> [Change] {
        let topics = options.feed.topics.subtracting([.items])
        guard !topics.isEmpty else { return [] }
        var changes: [Change] = []
        var position = since
        while position.seq < end.seq {
            let batch = try await client.changes(from: .after(position), limit: 1000, topics: topics)
            changes += batch.changes.prefix { Int64($0.seq) <= end.seq }
            guard batch.hasMore else { break }
            position = batch.cursor
        }
        return changes
    }

    /// Takes an item the server answered with (a command's, a refusal's current item): under a
    /// filter only one that matches it, and never one the feed has taken out of the filter (the
    /// feed, which brings it back in, decides: an answer may be older than that move).
    func confirmAnswered(_ item: Item) {
        guard !departed.contains(item.id) else { return }
        if let filter, !filter.matches(item) {
            confirmDeparture(of: item.id)
            return
        }
        confirm(item)
    }
}
