import Foundation
import StockroomStorage
import Testing

@testable import StockroomServer

/// What one daemon tells the store at each presence tick.
@Suite("PresenceTracker")
struct PresenceTrackerTests {
    static let erins = PresenceTick.Holder("phone", "erin")

    @Test func aFeedOpenedAndClosedBetweenTicksHoldsNoLeaseButIsSeenWhenItClosed() {
        let tracker = PresenceTracker(daemon: "d")
        let hold = tracker.open("phone", user: "erin")
        let opened = Date()
        hold.release()
        hold.release()  // again: nothing
        let news = tracker.drain()
        #expect(news.opened.isEmpty && news.closed.isEmpty)
        #expect(news.seen.keys.map(\.self) == [Self.erins])
        #expect((news.seen[Self.erins] ?? .distantPast) >= opened, "last seen when the feed closed")
    }

    @Test func theLastOfSeveralFeedsClosingGivesUpTheLease() {
        let tracker = PresenceTracker(daemon: "d")
        let first = tracker.open("phone", user: "erin")
        let second = tracker.open("phone", user: "erin")
        #expect(tracker.drain().opened == [Self.erins])
        first.release()
        #expect(tracker.drain().closed.isEmpty, "another feed of the device is still open")
        second.release()
        #expect(tracker.drain().closed == [Self.erins])
        // Closed and opened again before a tick: the lease stays, nothing to write about it.
        let third = tracker.open("phone", user: "erin")
        #expect(tracker.drain().opened == [Self.erins])
        third.release()
        let fourth = tracker.open("phone", user: "erin")
        let news = tracker.drain()
        #expect(news.opened.isEmpty && news.closed.isEmpty)
        // Shutdown gives up what is still open.
        #expect(tracker.drain(closingAll: true).closed == [Self.erins])
        fourth.release()
        #expect(tracker.drain().closed.isEmpty)
    }

    /// Feeds are counted per device and user: another user's feed naming the same device opens
    /// and closes a lease of its own, and neither holds nor gives up the other's.
    @Test func anotherUsersFeedOfTheSameDeviceIsCountedApart() {
        let tracker = PresenceTracker(daemon: "d")
        let ottos = PresenceTick.Holder("phone", "otto")
        let otto = tracker.open("phone", user: "otto")
        let erin = tracker.open("phone", user: "erin")
        #expect(tracker.drain().opened == [ottos, Self.erins])
        otto.release()
        // Each user's request is seen for itself: his does not hide hers from the tick.
        tracker.seen("phone", user: "erin")
        tracker.seen("phone", user: "otto")
        let news = tracker.drain()
        #expect(news.closed == [ottos])
        #expect(Set(news.seen.keys) == [ottos, Self.erins])
        let ottoAgain = tracker.open("phone", user: "otto")
        #expect(tracker.drain().opened == [ottos])
        erin.release()
        #expect(tracker.drain().closed == [Self.erins], "otto's feed still open")
        ottoAgain.release()
        #expect(tracker.drain().closed == [ottos])
    }

    @Test func newsAFailedTickDidNotWriteIsPutBack() {
        let tracker = PresenceTracker(daemon: "d")
        let hold = tracker.open("phone", user: "erin")
        let news = tracker.drain()
        tracker.putBack(news)
        #expect(tracker.drain().opened == [Self.erins])
        hold.release()
    }
}
