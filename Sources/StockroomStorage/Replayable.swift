import Foundation

/// Either the outcome of running a request now, or the stored response of its first run.
public enum Replayable<Value: Sendable>: Sendable {
    /// The request ran now (always so without an idempotency key).
    case fresh(Value)
    /// A retry: the first run's stored response, and nothing applied.
    case replayed(StoredResponse)

    /// The value of a fresh run. Only a write with an idempotency key can be a replay, which has no
    /// value but the stored response: reading it throws `ReplayedResponse`.
    public var value: Value {
        get throws {
            switch self {
            case .fresh(let value): return value
            case .replayed(let response): throw ReplayedResponse(response: response)
            }
        }
    }
}
