import Foundation
import StockroomWire

/// Where a subscriber starts reading.
public enum FeedStart: Sendable, Hashable {
    /// The beginning of the log.
    case beginning
    /// The head: only changes committed from now on.
    case now
    /// The oldest entry the log still keeps: the beginning, or where trimming left it.
    case oldest
    /// After this cursor.
    case after(FeedCursor)
}

extension FeedStart {
    /// The seq to read after, against a log whose newest seq is `head`, trimmed through `trimmed`,
    /// of `epoch`: `resyncRequired` for a cursor of another epoch, beyond the head or trimmed away,
    /// or for the beginning of a trimmed log. Every store resolves a start this way.
    package func resolve(head: Int64, trimmed: Int64, epoch: String) throws -> Int64 {
        switch self {
        case .now:
            return head
        case .oldest:
            return trimmed
        case .beginning:
            guard trimmed == 0 else { throw StoreError.resyncRequired("the beginning of the log was trimmed; start from a snapshot") }
            return 0
        case .after(let cursor):
            guard cursor.epoch == epoch else {
                throw StoreError.resyncRequired("the cursor belongs to another database epoch; start from a snapshot")
            }
            guard cursor.seq <= head else { throw StoreError.resyncRequired("the cursor is beyond the head of the log") }
            guard cursor.seq >= trimmed else {
                throw StoreError.resyncRequired("the cursor is older than the retained log; start from a snapshot")
            }
            return cursor.seq
        }
    }
}
