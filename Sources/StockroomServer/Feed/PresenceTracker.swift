import Foundation
import StockroomCore
import StockroomStorage
import Synchronization

/// This daemon's presence news between two ticks of `PresenceService`: the devices seen (a command
/// or feed request) and the devices whose first feed request or stream of a user opened here, or
/// whose last one closed, each per device and user (a lease is its user's: another user's feed
/// naming the device neither holds nor gives up the owner's, and another user's request naming it
/// does not hide the owner's from the tick). The service writes them with
/// `Storage.recordPresence`; nothing here waits on storage.
final class PresenceTracker: Sendable {
    typealias Holder = PresenceTick.Holder
    typealias News = (seen: [Holder: Date], opened: Set<Holder>, closed: Set<Holder>)

    /// This process's id in the leases it holds.
    let daemon: String

    private struct State {
        /// Feed requests and streams open now, by device and user.
        var open: [Holder: Int] = [:]
        var opened: Set<Holder> = []
        var closed: Set<Holder> = []
        /// The latest command or feed request of each device and user.
        var seen: [Holder: Date] = [:]
    }

    private let state = Mutex(State())

    init(daemon: String = UUID().uuidString.lowercased()) {
        self.daemon = daemon
    }

    /// A command or feed request of `clientID` by `user` arrived now.
    func seen(_ clientID: ClientID, user: UserID, at now: Date = Date()) {
        state.withLock { $0.seen[Holder(clientID, user)] = now }
    }

    /// A feed request or stream of `clientID` opened; the device counts as online until the
    /// returned hold is released (once).
    func open(_ clientID: ClientID, user: UserID) -> Hold {
        let holder = Holder(clientID, user)
        state.withLock { state in
            state.seen[holder] = Date()
            let count = state.open[holder, default: 0] + 1
            state.open[holder] = count
            // Closed and opened again before the tick: the lease stays as it is.
            if count == 1, state.closed.remove(holder) == nil { state.opened.insert(holder) }
        }
        return Hold(tracker: self, holder: holder)
    }

    fileprivate func close(_ holder: Holder) {
        state.withLock { state in
            guard let count = state.open[holder] else { return }
            // The device was there until now: last seen when its feed closed, not when it opened.
            state.seen[holder] = Date()
            guard count == 1 else {
                state.open[holder] = count - 1
                return
            }
            state.open.removeValue(forKey: holder)
            // Opened and closed before the tick: it never held a lease.
            if state.opened.remove(holder) == nil { state.closed.insert(holder) }
        }
    }

    /// Takes the news since the last call; `closingAll` also closes every device still open (shutdown).
    func drain(closingAll: Bool = false) -> News {
        state.withLock { state in
            if closingAll {
                for holder in state.open.keys where state.opened.remove(holder) == nil { state.closed.insert(holder) }
                state.open = [:]
            }
            defer {
                state.seen = [:]
                state.opened = []
                state.closed = []
            }
            return (state.seen, state.opened, state.closed)
        }
    }

    /// Puts back news a failed tick did not write: sightings not newer since, opens still open,
    /// closes not opened again (and a close opened again since: its open, which the store has not had).
    func putBack(_ news: News) {
        state.withLock { state in
            for (holder, at) in news.seen where (state.seen[holder] ?? .distantPast) < at { state.seen[holder] = at }
            for holder in news.opened where state.open[holder] != nil && !state.closed.contains(holder) { state.opened.insert(holder) }
            for holder in news.closed {
                if state.open[holder] == nil { state.closed.insert(holder) } else { state.opened.insert(holder) }
            }
        }
    }

    /// One open feed request or stream of a device; `release` ends it (again: nothing).
    final class Hold: Sendable {
        private let tracker: PresenceTracker
        private let holder: Holder
        private let released = Atomic<Bool>(false)

        fileprivate init(tracker: PresenceTracker, holder: Holder) {
            self.tracker = tracker
            self.holder = holder
        }

        func release() {
            guard !released.exchange(true, ordering: .relaxed) else { return }
            tracker.close(holder)
        }
    }
}
