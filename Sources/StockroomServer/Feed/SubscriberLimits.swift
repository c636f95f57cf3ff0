import Metrics
import StockroomCore
import Synchronization

/// Counts streams of one kind (feed subscribers; snapshots and exports) in total and per token;
/// past a cap a new one is refused with `503`.
final class SubscriberLimits: Sendable {
    /// What is counted: the caps' names in messages and in `stockroom_limit_refusals_total`.
    struct Kind: Sendable {
        /// How a refusal names what there are too many of ("feed subscribers").
        let noun: String
        let refusals: (total: Counter, perToken: Counter)

        /// Feed subscribers: streams, WebSockets, long-polls (`feed.maxSubscribers*`).
        static let subscribers = Kind(
            noun: "feed subscribers",
            refusals: (
                Counter(label: "stockroom_limit_refusals_total", dimensions: [("limit", "subscribers")]),
                Counter(label: "stockroom_limit_refusals_total", dimensions: [("limit", "subscribersPerToken")])
            ))
        /// Snapshots and exports being streamed, each holding a read of the store (`feed.maxSnapshots*`).
        static let snapshots = Kind(
            noun: "snapshots and exports streaming",
            refusals: (
                Counter(label: "stockroom_limit_refusals_total", dimensions: [("limit", "snapshots")]),
                Counter(label: "stockroom_limit_refusals_total", dimensions: [("limit", "snapshotsPerToken")])
            ))
    }

    private let kind: Kind
    private let maxTotal: Int
    private let maxPerToken: Int
    private let counts = Mutex<(total: Int, perToken: [TokenID: Int])>((0, [:]))

    init(_ kind: Kind = .subscribers, maxTotal: Int, maxPerToken: Int) {
        self.kind = kind
        self.maxTotal = maxTotal
        self.maxPerToken = maxPerToken
    }

    /// A place for one subscriber of `token`, held until the lease is released or dropped.
    func acquire(token: TokenID) throws -> Lease {
        let refusal: (counter: Counter, message: String)? = counts.withLock { counts in
            if counts.total >= maxTotal { return (kind.refusals.total, "too many \(kind.noun) (\(maxTotal)); retry later") }
            if counts.perToken[token, default: 0] >= maxPerToken {
                return (kind.refusals.perToken, "too many \(kind.noun) for this token (\(maxPerToken)); retry later")
            }
            counts.total += 1
            counts.perToken[token, default: 0] += 1
            return nil
        }
        if let refusal {
            refusal.counter.increment()
            var error = APIError(.unavailable, refusal.message)
            error.headers[.retryAfter] = "5"
            throw error
        }
        return Lease { [self] in
            counts.withLock { counts in
                counts.total -= 1
                counts.perToken[token, default: 1] -= 1
                if counts.perToken[token] == 0 { counts.perToken[token] = nil }
            }
        }
    }

    /// One subscriber's place; released once, at the latest when dropped.
    final class Lease: Sendable {
        private let onRelease: Mutex<(@Sendable () -> Void)?>

        init(_ onRelease: @escaping @Sendable () -> Void) { self.onRelease = Mutex(onRelease) }

        func release() {
            onRelease.withLock { action in
                let release = action
                action = nil
                return release
            }?()
        }

        deinit { release() }
    }
}
