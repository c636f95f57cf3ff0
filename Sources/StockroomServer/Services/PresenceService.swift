import Foundation
import Logging
import ServiceLifecycle
import StockroomStorage
import Synchronization

/// Writes this daemon's presence news (`PresenceTracker`) every second there is some, renews its
/// leases every `renewal`, comes back soon for a presence change held by coalescing, and removes
/// devices unseen for `retentionDays` (0: kept for ever) every hour. At shutdown it gives up
/// every lease it holds.
struct PresenceService: Service {
    let database: any Storage
    let tracker: PresenceTracker
    let retentionDays: Int
    let logger: Logger

    /// How long a lease lasts unless renewed: a daemon that dies leaves its devices online this long at most.
    static let lease: Duration = .seconds(30)
    static let renewal: Duration = .seconds(10)
    static let tick: Duration = .seconds(1)
    static let retentionInterval: Duration = .seconds(3600)

    func run() async throws {
        let clock = ContinuousClock()
        let state = Mutex<(renewed: ContinuousClock.Instant, swept: ContinuousClock.Instant?, waiting: Bool, failures: FailureStretch)>(
            (clock.now, nil, true, FailureStretch("recording presence")))
        await repeatUntilShutdown(every: Self.tick) {
            let now = clock.now
            let (renewDue, sweepDue, waiting) = state.withLock {
                (now - $0.renewed >= Self.renewal, $0.swept.map { now - $0 >= Self.retentionInterval } ?? true, $0.waiting)
            }
            let news = tracker.drain()
            if renewDue || waiting || !news.seen.isEmpty || !news.opened.isEmpty || !news.closed.isEmpty {
                do {
                    let stillWaiting = try await database.recordPresence(tick(news, renew: renewDue))
                    state.withLock {
                        if renewDue { $0.renewed = now }
                        $0.waiting = stillWaiting
                        $0.failures.succeeded(logger: logger)
                    }
                } catch {
                    tracker.putBack(news)
                    state.withLock {
                        $0.waiting = true
                        $0.failures.failed(error, logger: logger, now: now)
                    }
                }
            }
            if sweepDue, retentionDays > 0 {
                state.withLock { $0.swept = now }
                await removeStaleDevices()
            }
        }
        let news = tracker.drain(closingAll: true)
        do {
            try await database.recordPresence(tick(news, renew: false))
        } catch {
            logger.warning("giving up the presence leases at shutdown failed; they expire by themselves", metadata: ["error": "\(error)"])
        }
    }

    private func tick(_ news: PresenceTracker.News, renew: Bool) -> PresenceTick {
        let now = Date()
        return PresenceTick(
            daemon: tracker.daemon, now: now, leaseUntil: now.addingTimeInterval(Double(Self.lease.components.seconds)),
            seen: news.seen, opened: news.opened, closed: news.closed, renewLeases: renew)
    }

    private func removeStaleDevices() async {
        let cutoff = Date().addingTimeInterval(-Double(retentionDays) * 86_400)
        do {
            var removed = 0
            while true {
                let count = try await database.removeStaleDevices(notSeenSince: cutoff, limit: 500)
                removed += count
                if count < 500 { break }
            }
            if removed > 0 { logger.info("removed devices unseen for limits.deviceRetentionDays", metadata: ["count": "\(removed)"]) }
        } catch {
            logger.warning("removing stale devices failed; retrying in an hour", metadata: ["error": "\(error)"])
        }
    }
}
