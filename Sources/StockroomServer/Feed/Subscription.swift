import StockroomStorage
import StockroomWire

extension FeedController {
    /// A feed request's parsed parameters: its filter, where it asked to start, and that start
    /// resolved to a position in the log.
    struct Subscription: Sendable {
        let filter: FeedFilter
        let from: FeedStart
        let seq: Int64

        /// Resolves `from` against the log.
        static func resolve(_ from: FeedStart, filter: FeedFilter, in database: any Storage) async throws -> Subscription {
            Subscription(filter: filter, from: from, seq: try await database.resolve(from))
        }

        /// Reads the page after `seq` with `read`: every transport's reads of its feed go through
        /// here. A subscription from the oldest entry kept asks for whatever the log holds, so while
        /// it stands at its start (it has delivered no position yet), a trim past that position
        /// between resolving it and reading moves it to the oldest entry then kept (resolved again,
        /// a few times at most) instead of ending the feed with `resyncRequired`. Any other start the
        /// log no longer holds is `resyncRequired`.
        ///
        /// A live stream passes its hub subscription (`following`), which is told the page's cursor
        /// as its position (`FeedSubscription.read(through:)`). Where the entries after `seq` are
        /// trimmed from the log but none of them concerned the stream (`ChangeHub.unconcerned`), it
        /// reads on from past them.
        func read<Page: CursoredPage>(
            after seq: Int64, in database: any Storage, following subscription: FeedSubscription? = nil,
            _ read: (Int64) async throws -> Page
        ) async throws -> Page {
            let page = try await Self.pastTrimmed(after: seq, unconcerned: { subscription.flatMap { database.hub.unconcerned($0, after: seq) } }) {
                try await fromStart(after: $0, in: database, read)
            }
            subscription?.read(through: page.cursor.seq)
            return page
        }

        private func fromStart<Page>(
            after seq: Int64, in database: any Storage, _ read: (Int64) async throws -> Page
        ) async throws -> Page {
            guard from == .oldest, seq == self.seq else { return try await read(seq) }
            var seq = seq
            for _ in 0..<3 {
                do {
                    return try await read(seq)
                } catch StoreError.resyncRequired {
                    seq = try await database.resolve(from)
                }
            }
            return try await read(seq)
        }

        /// `body(seq)`, or, where the entries after `seq` are trimmed from the log and `unconcerned`
        /// (what the hub knows did not concern the stream) names a later position, `body` of that.
        static func pastTrimmed<Value>(
            after seq: Int64, unconcerned: () -> Int64?, _ body: (Int64) async throws -> Value
        ) async throws -> Value {
            do {
                return try await body(seq)
            } catch StoreError.resyncRequired(let message) {
                guard let next = unconcerned(), next > seq else { throw StoreError.resyncRequired(message) }
                return try await body(next)
            }
        }
    }
}

/// A page of the feed, read up to its cursor.
protocol CursoredPage {
    var cursor: FeedCursor { get }
}

extension FeedPage: CursoredPage {}
extension EncodedFeedPage: CursoredPage {}
