import AsyncAlgorithms
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import Synchronization

/// What the reading task and its watchdog share: the position to resume from, and when a byte last came.
final class FeedProgress: Sendable {
    struct State {
        var cursor: FeedCursor?
        var lastSeq: Int?
        var lastActivity = ContinuousClock.now
        var handingOver = false
    }

    let state: Mutex<State>

    init(cursor: FeedCursor?) {
        state = Mutex(State(cursor: cursor))
    }
}
