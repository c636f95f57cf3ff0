import StockroomCore
import StockroomStorage
import StockroomWire
import Synchronization

/// A WebSocket's requests to change its item filter (`setFilter`), handed from the task reading
/// the client's messages to the one following the feed: the newest request wins, and the follow
/// loop, woken, answers it with the delta (`refilter`) before any change under the new filter.
final class FilterControl: Sendable {
    private struct State {
        /// The item filter asked for and not yet applied: `.some(nil)` is every item.
        var pending: ItemFilter??
        var subscription: FeedSubscription?
    }

    private let state = Mutex(State())

    /// Asks for `filter` (nil: every item) and wakes the follow loop.
    func request(_ filter: ItemFilter?) {
        let subscription = state.withLock { state in
            state.pending = .some(filter)
            return state.subscription
        }
        subscription?.notify()
    }

    /// The subscription to wake for a request (the follow loop's).
    func attach(_ subscription: FeedSubscription) {
        let pending = state.withLock { state in
            state.subscription = subscription
            return state.pending != nil
        }
        if pending { subscription.notify() }
    }

    /// The filter asked for since the last call, if any.
    func take() -> ItemFilter?? {
        state.withLock { state in
            defer { state.pending = nil }
            return state.pending
        }
    }
}

extension FeedController {
    /// `{"items": [Item], "removed": [id], "cursor"}`.
    static func write(_ delta: Refilter, to json: inout JSONWriter) {
        json.raw(#"{"items":["#)
        for (index, item) in delta.items.enumerated() {
            if index > 0 { json.raw(",") }
            item.write(to: &json)
        }
        json.raw(#"],"removed":["#)
        for (index, id) in delta.removed.enumerated() {
            if index > 0 { json.raw(",") }
            json.itemID(id)
        }
        json.raw(#"],"cursor":"#)
        json.string(delta.cursor.encoded)
        json.raw("}")
    }
}
