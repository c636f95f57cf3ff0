import StockroomWire
import Testing

@Suite struct FeedCursorTests {
    @Test("a cursor reads back as written")
    func roundTrips() {
        for cursor in [FeedCursor(epoch: "0123456789abcdef0123456789abcdef", seq: 0), FeedCursor(epoch: "ab", seq: Int64.max)] {
            #expect(FeedCursor(encoded: cursor.encoded) == cursor)
        }
        #expect(FeedCursor(encoded: "c1.00AF.7") == FeedCursor(epoch: "00AF", seq: 7))
    }

    /// Only ASCII: `Character.isHexDigit` and `Int64(_:)` alone would take fullwidth hex digits and
    /// a sign, and such a cursor was then answered as one of another epoch.
    @Test("anything else is malformed", arguments: [
        "", "c1", "c1..1", "c1.ab.", "c2.ab.1", "c1.ab.1.2", "c1.ab.x", "c1.g0.1",
        "c1.\u{FF10}\u{FF46}.1", "c1.ab.\u{FF11}", "c1.ab.+1", "c1.ab.-1", "c1.ab.-0", "c1.ab. 1",
        "c1.ab.99999999999999999999",
    ])
    func malformed(_ text: String) {
        #expect(FeedCursor(encoded: text) == nil)
    }
}
