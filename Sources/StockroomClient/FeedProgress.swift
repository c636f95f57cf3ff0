import AsyncHTTPClient
import Foundation
import NIOCore
import NIOConcurrencyHelpers
import NIOFoundationCompat

/// What the reading task and its watchdog share: the position to resume from, and when a byte last came.
final class FeedProgress: Sendable {
    struct State {
        var cursor: FeedCursor?
        var lastSeq: Int?
        var lastActivity = ContinuousClock.now
        var handingOver = false
        /// A connection opened since the runner last looked (its backoff starts again).
        var opened = false
    }

    let state: NIOLockedValueBox<State>

    init(cursor: FeedCursor?) {
        state = NIOLockedValueBox(State(cursor: cursor))
    }
}
