import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

/// How this daemon learns of other daemons' commits: one dedicated connection (not a pooled one)
/// listening on the `stockroom` channel, where every transaction that appends to the log notifies
/// its new head (`h <seq>`, after its entries when they fit: `NotifiedEntries`) and every token
/// revocation the new token generation (`t <generation>`), delivered when they commit, in commit
/// order. The head is only a hint: the hub takes a notification's entries when they continue its
/// head, and otherwise reads the entries from the table (`catchUp`), once for all of this daemon's
/// subscribers. After the listener (re)connects it catches up from the hub's head, and a poll
/// every `pollInterval` covers a notification that never came.
extension PostgresStore {
    /// Listens until cancelled, reconnecting after any failure (50 ms, doubling to 2 s). Each
    /// session is a watched call (`PostgresCalls`): given up on when its connection closes under it,
    /// or when it does not listen within `deadline` of starting.
    func listen() async {
        var backoff: Duration = .milliseconds(50)
        var connectionID = 1
        while !Task.isCancelled {
            let call = PendingCall<Void>(bound: deadline)
            let id = calls.insert(call)
            let sessionID = connectionID
            connectionID += 1
            do {
                try await call.run { try await self.listenOnce(call, connectionID: sessionID) }
            } catch {
                if !Task.isCancelled {
                    logger.warning("the PostgreSQL listener failed; reconnecting", metadata: ["error": "\(String(reflecting: error))"])
                }
            }
            calls.remove(id)
            listenerState.withLock { $0.connected = false }
            if let connection = call.connection, !connection.isClosed { Task { try? await connection.close() } }
            if Task.isCancelled { return }
            // A session that listened (its bound lifted) starts the backoff again.
            if call.bound == nil { backoff = .milliseconds(50) }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(2))
        }
    }

    /// One listening session on a connection of its own, until the connection ends.
    private func listenOnce(_ call: PendingCall<Void>, connectionID: Int) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: try url.connectionConfiguration(), id: connectionID, logger: logger)
        call.obtained(connection)
        defer { listenerState.withLock { $0.connected = false } }
        do {
            try await connection.listen(on: Self.channel) { notifications in
                // LISTEN is active: anything committed from now on is notified; what came before is
                // followed as a notification of the head would be (read only for a subscriber here).
                call.unbound()
                listenerState.withLock { $0.connected = true }
                if let head = try? await read({ connection in try await self.watermarks(connection).head }) {
                    await follow(to: head)
                }
                for try await notification in notifications {
                    await handle(notification.payload)
                }
            }
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
    }

    /// Every `pollInterval`, the head and the token generation: what a lost notification would have said.
    func poll() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: pollInterval)
            guard !Task.isCancelled else { return }
            do {
                let (head, generation, epoch) = try await read { connection in
                    let rows = try await connection.query(
                        """
                        SELECT (SELECT seq FROM log_head WHERE id = 1), (SELECT value FROM meta WHERE key = 'token_generation'),
                               (SELECT value FROM meta WHERE key = 'epoch')
                        """,
                        logger: self.logger
                    ).collect()
                    let (head, generation, epoch) = try rows[0].decode((Int64, String, String).self)
                    return (head, Int64(generation) ?? 0, epoch)
                }
                epochChanged(to: epoch)
                hub.observeTokenGeneration(generation)
                await follow(to: head)
            } catch {
                // PostgreSQL is unreachable: the next round tries again.
            }
        }
    }

    /// Acts on one notification: `H <head> <sender>\n<entries>` (`NotifiedEntries`), `h <head>`,
    /// `t <token generation>`, `e <epoch>`.
    func handle(_ payload: String) async {
        if payload.hasPrefix("H ") {
            take(notified: payload.dropFirst(2))
            return
        }
        let parts = payload.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return }
        switch (parts[0], Int64(parts[1])) {
        case ("h", let head?): await follow(to: head)
        case ("t", let generation?): hub.observeTokenGeneration(generation)
        case ("e", _): epochChanged(to: String(parts[1]))
        default: break
        }
    }

    /// Hands the entries of another daemon's head step to the hub when they continue its head and
    /// a subscriber here reads them. Anything else is left to the `h <head>` that follows: this
    /// daemon's own entries (its committer publishes them after answering their writers), a gap
    /// before them (read from the table), an idle hub (its head moves without them).
    func take(notified text: Substring) {
        guard let newline = text.firstIndex(of: "\n") else { return }
        let words = text[..<newline].split(separator: " ")
        guard words.count == 2, let head = Int64(words[0]), words[1] != sender, head > hub.head, !hub.isIdle,
            let entries = NotifiedEntries.decode(text[text.index(after: newline)...], head: head, epoch: epoch), !entries.isEmpty
        else { return }
        if hub.committed(entries) { notifiedEntries.add(entries.count, ordering: .relaxed) }
    }

    /// Brings the hub to `head`, which a transaction committed with everything before it. With no
    /// subscriber on this daemon the hub only moves its head (`ChangeHub.skipped(to:)`): nothing
    /// here would read the entries, and a daemon behind a load balancer that serves no feed then
    /// costs PostgreSQL no read per commit of the others. A subscriber that arrives reads from the log.
    func follow(to head: Int64) async {
        guard head > hub.head else { return }
        if hub.isIdle {
            hub.skipped(to: head)
        } else {
            await catchUp()
        }
    }

    /// Reads what the table holds past the hub's head into the hub, page by page.
    func catchUp() async {
        while true {
            let after = hub.head
            guard let page = try? await readLoggedChanges(after: after, filter: nil, limit: 1_000), !page.changes.isEmpty else { return }
            guard hub.committed(page.changes), page.hasMore else { return }
        }
    }

    /// The channel every daemon listens on and every log-appending transaction notifies.
    static let channel = "stockroom"

    /// Whether the listener holds a LISTEN now (for tests and operations).
    public var isListening: Bool { listenerState.withLock { $0.connected } }
}

/// The listener's state, read by `isListening`.
struct ListenerState {
    var connected = false
}
