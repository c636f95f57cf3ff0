import Foundation
import Hummingbird
import Metrics
import StockroomCore
import Synchronization

/// Per-token token buckets: each token may send `rate` writes a second, sustained, and `burst` at once.
final class WriteRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let buckets = Mutex<[TokenID: Bucket]>([:])
    let rate: Double
    let burst: Double

    init(rate: Int, burst: Int) {
        self.rate = Double(rate)
        self.burst = Double(burst)
    }

    /// Takes one write for `key`; nil when allowed, else how long until one is.
    func take(_ key: TokenID, now: ContinuousClock.Instant = .now) -> Duration? {
        secondsToWait(key, now: now).map { .seconds($0) }
    }

    /// Takes one write for `key`; nil when allowed, else the seconds until one is.
    func secondsToWait(_ key: TokenID, now: ContinuousClock.Instant = .now) -> Double? {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + seconds * rate)
            bucket.updated = now
            defer {
                // Full buckets carry no information: forget them when the table grows, so memory
                // stays bounded by the tokens that are actually busy.
                if buckets.count > 10_000 { buckets = buckets.filter { $0.value.tokens < burst } }
            }
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return (1 - bucket.tokens) / rate
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            return nil
        }
    }
}

/// Caps the writes and commands (POST, PUT, DELETE) of each token, so one client cannot hold the
/// single writer for everyone: over the rate, `429 tooManyRequests` with `Retry-After` (whole
/// seconds, rounded up), counted in `stockroom_rate_limited_total`. Runs after authentication and
/// before the route, so a refused request costs no database work.
struct WriteRateLimitMiddleware: RouterMiddleware {
    typealias Context = CallerContext

    let limiter: WriteRateLimiter
    let refusals = Counter(label: "stockroom_rate_limited_total")

    init(writesPerSecond: Int, burst: Int) {
        limiter = WriteRateLimiter(rate: writesPerSecond, burst: burst)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        switch request.method {
        case .post, .put, .delete, .patch:
            if let wait = limiter.secondsToWait(context.caller.id) {
                refusals.increment()
                let seconds = max(1, Int(wait.rounded(.up)))
                var error = APIError(
                    .tooManyRequests,
                    "this token sends writes faster than \(Int(limiter.rate)) a second; retry after \(seconds) s")
                error.headers[.retryAfter] = "\(seconds)"
                throw error
            }
        default:
            break
        }
        return try await next(request, context)
    }
}
