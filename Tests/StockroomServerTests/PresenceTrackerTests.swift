import Foundation
import Testing

@testable import StockroomServer

/// What one daemon tells the store at each presence tick.
@Suite("PresenceTracker")
struct PresenceTrackerTests {
    @Test func aFeedOpenedAndClosedBetweenTicksHoldsNoLeaseButIsSeenWhenItClosed() {
        let tracker = PresenceTracker(daemon: "d")
        let hold = tracker.open("phone", user: "erin")
        let opened = Date()
        hold.release()
        hold.release()  // again: nothing
        let news = tracker.drain()
        #expect(news.opened.isEmpty && news.closed.isEmpty)
        #expect(news.seen["phone"]?.user == "erin")
        #expect((news.seen["phone"]?.at ?? .distantPast) >= opened, "last seen when the feed closed")
    }

    @Test func theLastOfSeveralFeedsClosingGivesUpTheLease() {
        let tracker = PresenceTracker(daemon: "d")
        let first = tracker.open("phone", user: "erin")
        let second = tracker.open("phone", user: "erin")
        #expect(tracker.drain().opened == ["phone": "erin"])
        first.release()
        #expect(tracker.drain().closed.isEmpty, "another feed of the device is still open")
        second.release()
        #expect(tracker.drain().closed == ["phone"])
        // Closed and opened again before a tick: the lease stays, nothing to write about it.
        let third = tracker.open("phone", user: "erin")
        #expect(tracker.drain().opened == ["phone": "erin"])
        third.release()
        let fourth = tracker.open("phone", user: "erin")
        let news = tracker.drain()
        #expect(news.opened.isEmpty && news.closed.isEmpty)
        // Shutdown gives up what is still open.
        #expect(tracker.drain(closingAll: true).closed == ["phone"])
        fourth.release()
        #expect(tracker.drain().closed.isEmpty)
    }

    @Test func newsAFailedTickDidNotWriteIsPutBack() {
        let tracker = PresenceTracker(daemon: "d")
        let hold = tracker.open("phone", user: "erin")
        let news = tracker.drain()
        tracker.putBack(news)
        #expect(tracker.drain().opened == ["phone": "erin"])
        hold.release()
    }
}
