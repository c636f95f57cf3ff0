/// Exponential backoff with full jitter: attempt n waits a random time up to
/// `min(maximum, initial * 2^(n-1))`, but at least a tenth of that, so that many clients
/// dropped at once by one server restart do not all come back in the same instant.
public struct Backoff: Hashable, Sendable {
    /// The ceiling of the first wait.
    public var initial: Duration
    /// The largest ceiling.
    public var maximum: Duration

    /// Creates a backoff policy.
    public init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(30)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The wait before attempt `attempt` (1 for the first retry).
    public func delay(attempt: Int) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(maximum, initial * (1 << exponent))
        let fraction = Double.random(in: 0.1...1.0)
        return ceiling * fraction
    }

    /// The wait before attempt `attempt` after `error`: the backoff's, or longer when the server
    /// said when to come back (`Retry-After` on a `503` or `429`). The feed and the write queue
    /// both wait this way.
    public func delay(attempt: Int, after error: any Error) -> Duration {
        max(delay(attempt: attempt), (error as? StockroomError)?.retryAfter ?? .zero)
    }
}
