
/// The snapshot, `{"items":[Item],"navigation":[Navigation],"cursor":FeedCursor}`, written in
/// pieces as its rows are read: the opening, the separators, the closing. Each item by `ItemJSON`,
/// each navigation by `Navigation.write(to:)`.
public enum SnapshotJSON {
    /// Before the first item.
    public static func writeOpening(to json: inout JSONWriter) { json.raw(#"{"items":["#) }
    /// Between the items and the first navigation.
    public static func writeItemsEnd(to json: inout JSONWriter) { json.raw(#"],"navigation":["#) }
    /// Between two items or two navigations.
    public static func writeSeparator(to json: inout JSONWriter) { json.raw(",") }
    /// After the last navigation: the cursor and the end.
    public static func writeClosing(cursor: FeedCursor, to json: inout JSONWriter) {
        json.raw(#"],"cursor":"#)
        FeedCursor.write(epoch: cursor.epoch.utf8, seq: cursor.seq, to: &json)
        json.raw("}")
    }
}
