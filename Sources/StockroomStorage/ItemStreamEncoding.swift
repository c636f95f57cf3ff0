import StockroomCore
import StockroomWire

/// How `Storage.streamItems` writes what it reads (the CSV export's encoder, for one): a header
/// once, with the feed cursor the read is current at, then each item, appended to the chunk being
/// filled.
public struct ItemStreamEncoding: Sendable {
    public var header: @Sendable (FeedCursor) -> [UInt8]
    public var item: @Sendable (Item, inout JSONWriter) -> Void

    public init(header: @escaping @Sendable (FeedCursor) -> [UInt8], item: @escaping @Sendable (Item, inout JSONWriter) -> Void) {
        self.header = header
        self.item = item
    }

    /// How many bytes a chunk holds at least before it is handed on (the last may be smaller).
    public static let chunkBytes = 64 * 1024
}
