import Foundation
import GRDB
import StockroomStorage
import Synchronization

#if canImport(GRDBSQLite)
    import GRDBSQLite
#elseif canImport(SQLite3)
    import SQLite3
#endif

/// Pages of the log read ahead for clients catching up: at most `capacity` (each at most
/// `FeedPage.byteBudget` of JSON), the oldest dropped first; a page is taken once.
final class FeedPagePrefetch: Sendable {
    struct Key: Hashable, Sendable {
        let seq: Int64
        let filter: FeedFilter
        let limit: Int
    }

    static let capacity = 8
    private let pages = Mutex<[(key: Key, page: Task<EncodedFeedPage, any Error>)]>([])

    /// The page read ahead for `key`, if any; it is removed from the pages kept.
    func take(_ key: Key) -> Task<EncodedFeedPage, any Error>? {
        pages.withLock { pages in
            guard let index = pages.firstIndex(where: { $0.key == key }) else { return nil }
            return pages.remove(at: index).page
        }
    }

    /// Keeps a page being read ahead for `key`.
    func put(_ key: Key, _ page: Task<EncodedFeedPage, any Error>) {
        pages.withLock { pages in
            pages.removeAll { $0.key == key }
            pages.append((key, page))
            if pages.count > Self.capacity { pages.removeFirst(pages.count - Self.capacity) }
        }
    }
}
