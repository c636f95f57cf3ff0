import StockroomCore

/// The answer to a navigation command, `{"navigation":Navigation,"item":Item|null,"cursor":FeedCursor}`:
/// the server writes it, the SDK decodes it.
public struct CommandResultJSON: JSONWritable, Hashable, Sendable, Decodable {
    public let navigation: Navigation
    public let item: Item?
    public let cursor: FeedCursor

    public init(navigation: Navigation, item: Item?, cursor: FeedCursor) {
        self.navigation = navigation
        self.item = item
        self.cursor = cursor
    }

    public func write(to json: inout JSONWriter) {
        Self.write(navigation: navigation, item: item, cursor: cursor, to: &json)
    }

    /// The answer from its parts as they write themselves, or as they were written already
    /// (`WrittenJSON`: the JSON a command's change entries hold).
    public static func write(navigation: some JSONWritable, item: (some JSONWritable)?, cursor: FeedCursor, to json: inout JSONWriter) {
        json.raw(#"{"navigation":"#)
        navigation.write(to: &json)
        json.raw(#","item":"#)
        if let item { item.write(to: &json) } else { json.raw("null") }
        json.raw(#","cursor":"#)
        FeedCursor.write(epoch: cursor.epoch.utf8, seq: cursor.seq, to: &json)
        json.raw("}")
    }
}
