import Foundation
import StockroomCore
import StockroomWire
import Synchronization

/// Where a subscriber starts reading.
public enum FeedStart: Sendable, Hashable {
    /// The beginning of the log.
    case beginning
    /// The head: only changes committed from now on.
    case now
    /// After this cursor.
    case after(FeedCursor)
}
