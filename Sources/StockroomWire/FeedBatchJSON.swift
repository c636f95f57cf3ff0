/// The long-poll answer, `{"changes":[Change],"cursor":FeedCursor,"hasMore":Bool}`, around changes
/// already written by `ChangeJSON` and joined by commas (`EncodedFeedPage`), which go between the
/// opening and the closing as they are.
public enum FeedBatchJSON {
    /// Before the first change.
    public static let opening: StaticString = #"{"changes":["#

    /// After the last change: the cursor, `hasMore` and the end.
    public static func closing(cursor: FeedCursor, hasMore: Bool) -> [UInt8] {
        var json = JSONWriter(capacity: cursor.epoch.utf8.count + 48)
        json.raw(#"],"cursor":"#)
        FeedCursor.write(epoch: cursor.epoch.utf8, seq: cursor.seq, to: &json)
        json.raw(hasMore ? #","hasMore":true}"# : #","hasMore":false}"#)
        return json.bytes
    }
}
