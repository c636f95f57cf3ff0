import Metrics
import StockroomCore
import Synchronization

/// Counts feed subscribers in total and per token; past a cap a new one is refused with `503`.
final class SubscriberLimits: Sendable {
    private let maxTotal: Int
    private let maxPerToken: Int
    private let counts = Mutex<(total: Int, perToken: [TokenID: Int])>((0, [:]))

    /// `stockroom_limit_refusals_total` of each cap, made once (at startup: `FeedController.registerMetrics`).
    static let refusals = (
        total: Counter(label: "stockroom_limit_refusals_total", dimensions: [("limit", "subscribers")]),
        perToken: Counter(label: "stockroom_limit_refusals_total", dimensions: [("limit", "subscribersPerToken")])
    )

    init(maxTotal: Int, maxPerToken: Int) {
        self.maxTotal = maxTotal
        self.maxPerToken = maxPerToken
    }

    /// A place for one subscriber of `token`, held until the lease is released or dropped.
    func acquire(token: TokenID) throws -> Lease {
        let refusal: (counter: Counter, message: String)? = counts.withLock { counts in
            if counts.total >= maxTotal { return (Self.refusals.total, "too many feed subscribers (\(maxTotal)); retry later") }
            if counts.perToken[token, default: 0] >= maxPerToken {
                return (Self.refusals.perToken, "too many feed subscribers for this token (\(maxPerToken)); retry later")
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
