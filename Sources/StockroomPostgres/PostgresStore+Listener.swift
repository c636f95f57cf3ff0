import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import StockroomCore
import StockroomStorage
import Synchronization

/// How this daemon learns of other daemons' commits: one dedicated connection (not a pooled one)
/// listening on the `stockroom` channel, where every transaction that appends to the log notifies
/// its new head (`h <seq>`) and every token revocation the new token generation (`t <generation>`),
/// delivered when they commit, in commit order. A notification is only a hint: the hub reads the
/// entries from the table (`catchUp`), once for all of this daemon's subscribers. After the
/// listener (re)connects it catches up from the hub's head, and a poll every `pollInterval` covers a
/// notification that never came.
extension PostgresStore {
    /// Listens until cancelled, reconnecting after any failure (50 ms, doubling to 2 s).
    func listen() async {
        var backoff: Duration = .milliseconds(50)
        var connectionID = 1
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try url.connectionConfiguration(), id: connectionID, logger: logger)
                connectionID += 1
                do {
                    try await connection.listen(on: Self.channel) { notifications in
                        // LISTEN is active: anything committed from now on is notified; what came before is read.
                        listenerState.withLock { $0.connected = true }
                        backoff = .milliseconds(50)
                        await catchUp()
                        for try await notification in notifications {
                            await handle(notification.payload)
                        }
                    }
                } catch {
                    listenerState.withLock { $0.connected = false }
                    try? await connection.close()
                    throw error
                }
                listenerState.withLock { $0.connected = false }
                try? await connection.close()
            } catch {
                if Task.isCancelled { return }
                logger.warning("the PostgreSQL listener failed; reconnecting", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(2))
        }
    }

    /// Every `pollInterval`, the head and the token generation: what a lost notification would have said.
    func poll() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: pollInterval)
            guard !Task.isCancelled else { return }
            do {
                let (head, generation) = try await read { connection in
                    let rows = try await connection.query(
                        "SELECT (SELECT seq FROM log_head WHERE id = 1), (SELECT value FROM meta WHERE key = 'token_generation')",
                        logger: self.logger
                    ).collect()
                    let (head, generation) = try rows[0].decode((Int64, String).self)
                    return (head, Int64(generation) ?? 0)
                }
                hub.observeTokenGeneration(generation)
                if head > hub.head { await catchUp() }
            } catch {
                // PostgreSQL is unreachable: the next round tries again.
            }
        }
    }

    /// Acts on one notification.
    func handle(_ payload: String) async {
        let parts = payload.split(separator: " ", maxSplits: 1)
        guard let kind = parts.first, parts.count == 2, let number = Int64(parts[1]) else { return }
        switch kind {
        case "h" where number > hub.head: await catchUp()
        case "t": hub.observeTokenGeneration(number)
        default: break
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
