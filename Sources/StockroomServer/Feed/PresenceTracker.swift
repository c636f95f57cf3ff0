import Foundation
import StockroomCore
import StockroomStorage
import Synchronization

/// This daemon's presence news between two ticks of `PresenceService`: the devices seen (a command
/// or feed request) and the devices whose first feed request or stream opened here, or whose last
/// one closed. The service writes them with `Storage.recordPresence`; nothing here waits on storage.
final class PresenceTracker: Sendable {
    /// This process's id in the leases it holds.
    let daemon: String

    private struct State {
        /// Feed requests and streams open now, by device.
        var open: [ClientID: (user: UserID, count: Int)] = [:]
        var opened: [ClientID: UserID] = [:]
        var closed: Set<ClientID> = []
        var seen: [ClientID: PresenceTick.Sighting] = [:]
    }

    private let state = Mutex(State())

    init(daemon: String = UUID().uuidString.lowercased()) {
        self.daemon = daemon
    }

    /// A command or feed request of `clientID` by `user` arrived now.
    func seen(_ clientID: ClientID, user: UserID, at now: Date = Date()) {
        state.withLock { $0.seen[clientID] = .init(user: user, at: now) }
    }

    /// A feed request or stream of `clientID` opened; the device counts as online until the
    /// returned hold is released (once).
    func open(_ clientID: ClientID, user: UserID) -> Hold {
        state.withLock { state in
            state.seen[clientID] = .init(user: user, at: Date())
            let count = (state.open[clientID]?.count ?? 0) + 1
            state.open[clientID] = (user, count)
            // Closed and opened again before the tick: the lease stays as it is.
            if count == 1, state.closed.remove(clientID) == nil { state.opened[clientID] = user }
        }
        return Hold(tracker: self, clientID: clientID)
    }

    fileprivate func close(_ clientID: ClientID) {
        state.withLock { state in
            guard let entry = state.open[clientID] else { return }
            // The device was there until now: last seen when its feed closed, not when it opened.
            state.seen[clientID] = .init(user: entry.user, at: Date())
            guard entry.count == 1 else {
                state.open[clientID] = (entry.user, entry.count - 1)
                return
            }
            state.open.removeValue(forKey: clientID)
            // Opened and closed before the tick: it never held a lease.
            if state.opened.removeValue(forKey: clientID) == nil { state.closed.insert(clientID) }
        }
    }

    /// Takes the news since the last call; `closingAll` also closes every device still open (shutdown).
    func drain(closingAll: Bool = false) -> (seen: [ClientID: PresenceTick.Sighting], opened: [ClientID: UserID], closed: Set<ClientID>) {
        state.withLock { state in
            if closingAll {
                for id in state.open.keys where state.opened.removeValue(forKey: id) == nil { state.closed.insert(id) }
                state.open = [:]
            }
            defer {
                state.seen = [:]
                state.opened = [:]
                state.closed = []
            }
            return (state.seen, state.opened, state.closed)
        }
    }

    /// Puts back news a failed tick did not write: sightings not newer since, opens still open,
    /// closes not opened again.
    func putBack(_ news: (seen: [ClientID: PresenceTick.Sighting], opened: [ClientID: UserID], closed: Set<ClientID>)) {
        state.withLock { state in
            for (id, sighting) in news.seen where (state.seen[id]?.at ?? .distantPast) < sighting.at { state.seen[id] = sighting }
            for (id, user) in news.opened where state.open[id] != nil && !state.closed.contains(id) { state.opened[id] = user }
            for id in news.closed where state.open[id] == nil { state.closed.insert(id) }
            for id in news.closed where state.open[id] != nil { state.opened[id] = state.open[id]!.user }
        }
    }

    /// One open feed request or stream of a device; `release` ends it (again: nothing).
    final class Hold: Sendable {
        private let tracker: PresenceTracker
        private let clientID: ClientID
        private let released = Atomic<Bool>(false)

        fileprivate init(tracker: PresenceTracker, clientID: ClientID) {
            self.tracker = tracker
            self.clientID = clientID
        }

        func release() {
            guard !released.exchange(true, ordering: .relaxed) else { return }
            tracker.close(clientID)
        }
    }
}
