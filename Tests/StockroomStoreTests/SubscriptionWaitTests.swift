import Foundation
import TestSupport
import Testing

import StockroomStorage
@testable import StockroomStore

/// A stream's wait has a deadline but no timer: the server's sweep ends it with `expireWait(ifDueBy:)`.
@Suite struct SubscriptionWaitTests {
    /// Waits on `subscription` in a task of its own and returns that task once the wait is parked.
    func parkedWait(_ subscription: FeedSubscription, until deadline: ContinuousClock.Instant) async throws -> Task<Bool, Never> {
        let task = Task { await subscription.wait(until: deadline) }
        // Before it parks, an expiry finds no waiter: wait for the waiter itself, not for a time.
        try await eventually("the wait is parked") { subscription.isWaiting }
        return task
    }

    /// A subscriber parked on the hub of a database that holds one item, and the entry the next
    /// commit would hand the hub (as the commit observer would).
    func parkedSubscriberAndNextEntry(_ database: AppDatabase) async throws -> (FeedSubscription, Task<Bool, Never>, ChangeEntry) {
        _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
        let subscription = database.hub.subscribe(FeedFilter(user: "erin", topics: [.item]))
        let wait = try await parkedWait(subscription, until: .now + .seconds(3600))
        var entry = try await database.readLoggedChanges(after: 0, filter: subscription.filter, limit: 1).changes[0]
        entry.seq = database.hub.head + 1
        return (subscription, wait, entry)
    }

    @Test func aSweepBeforeTheDeadlineLeavesTheWaitAndOneAtTheDeadlineEndsIt() async throws {
        try await withTemporaryDatabase { database in
            let subscription = database.hub.subscribe(FeedFilter(user: "erin", topics: [.item]))
            defer { subscription.cancel() }
            let deadline = ContinuousClock.now + .seconds(3600)
            let wait = try await parkedWait(subscription, until: deadline)
            subscription.expireWait(ifDueBy: deadline - .seconds(1))
            // Still waiting: a commit now ends the wait with true.
            _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
            #expect(await wait.value == true)

            let second = try await parkedWait(subscription, until: deadline)
            subscription.expireWait(ifDueBy: deadline)
            #expect(await second.value == false)
        }
    }

    @Test func aCommitWhileNobodyWaitsIsKeptForTheNextWait() async throws {
        try await withTemporaryDatabase { database in
            let subscription = database.hub.subscribe(FeedFilter(user: "erin", topics: [.item]))
            defer { subscription.cancel() }
            _ = try await database.createItem(id: nil, draft: Sample.keyboard, origin: Sample.erin)
            // Already past its deadline, yet the pending notification answers first.
            #expect(await subscription.wait(until: .now - .seconds(1)) == true)
            // Nothing pending now: a sweep at the deadline ends the next wait.
            let deadline = ContinuousClock.now + .seconds(3600)
            let wait = try await parkedWait(subscription, until: deadline)
            subscription.expireWait(ifDueBy: .now + .seconds(7200))
            #expect(await wait.value == false)
        }
    }

    @Test func closingAndCancellingEndAWaitThatHasNoDeadlineDue() async throws {
        try await withTemporaryDatabase { database in
            let subscription = database.hub.subscribe(FeedFilter(user: "erin", topics: [.item]))
            let wait = try await parkedWait(subscription, until: .now + .seconds(3600))
            subscription.cancel()
            #expect(await wait.value == false)

            let other = database.hub.subscribe(FeedFilter(user: "erin", topics: [.item]))
            defer { other.cancel() }
            let cancelled = try await parkedWait(other, until: .now + .seconds(3600))
            cancelled.cancel()
            #expect(await cancelled.value == false)
        }
    }

    /// A group commit's wake-ups wait until its writers are answered: a subscriber stays parked
    /// while the batch runs, and wakes once it has.
    @Test func aBatchsWakeUpsWaitUntilTheBatchHasAnswered() async throws {
        try await withTemporaryDatabase { database in
            let hub = database.hub
            let (subscription, wait, entry) = try await parkedSubscriberAndNextEntry(database)
            defer { subscription.cancel() }
            var parkedDuringBatch = false
            hub.holdingWakes {
                hub.committed([entry])
                parkedDuringBatch = subscription.isWaiting
            }
            #expect(parkedDuringBatch, "woken before the batch was answered")
            #expect(await wait.value == true)
            // The entry was readable at once all the same.
            #expect(hub.recentChanges(after: entry.seq - 1, filter: subscription.filter, limit: 10)?.changes == [entry])
        }
    }

    /// Holds may overlap (a PostgreSQL batch's hold lasts until a task after its answers releases
    /// it, and the next batch may hold meanwhile): wake-ups wait until the last hold is released.
    @Test func overlappingHoldsWakeOnlyWhenTheLastIsReleased() async throws {
        try await withTemporaryDatabase { database in
            let hub = database.hub
            let (subscription, wait, entry) = try await parkedSubscriberAndNextEntry(database)
            defer { subscription.cancel() }
            hub.holdWakes()
            hub.holdWakes()
            hub.committed([entry])
            hub.releaseWakes()
            #expect(subscription.isWaiting, "woken while a hold was still held")
            #expect(hub.recentChanges(after: entry.seq - 1, filter: subscription.filter, limit: 10)?.changes == [entry])
            hub.releaseWakes()
            #expect(await wait.value == true)
        }
    }
}
