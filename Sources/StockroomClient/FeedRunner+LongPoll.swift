// The feed as long-polls (`GET /v1/changes?wait=`), one request at a time.

extension FeedRunner {
    /// Long-polls from the progress's cursor until a poll fails. Each answer's changes go to the
    /// reader together; an answer's cursor past its last change (entries the caller does not see)
    /// is where the next poll starts, said as `.progress` (as the streams' `progress` events say it).
    func followLongPolls(wait: Duration, limit: Int, progress: FeedProgress) async throws {
        // What the contract takes (a wait of 0-60 s, 1-1,000 changes), and a wait the client's
        // request timeout leaves room for.
        let wait = max(.zero, min(wait, .seconds(60), client.requestTimeout - .seconds(5)))
        let limit = min(max(limit, 1), 1_000)
        var isOpen = false
        while !Task.isCancelled {
            let cursor = progress.state.withLockedValue { $0.cursor }
            let (batch, bytes) = try await client.changePage(
                from: cursor.map { .after($0) } ?? .beginning, limit: limit, topics: options.topics, filter: options.filter,
                wait: wait)
            if !isOpen {
                isOpen = true
                await opened(progress)
            }
            var handover = Handover(after: progress, bytes: bytes)
            for change in batch.changes { handover.change(change) }
            handover.moved(to: batch.cursor)
            await handover.deliver(to: buffer, progress)
        }
    }
}
