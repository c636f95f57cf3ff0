import Foundation

/// A request carrying an Idempotency-Key, and how to render its outcome for storage.
public struct IdempotentRequest<Value: Sendable>: Sendable {
    /// The key and its scope.
    public var key: IdempotencyKey
    /// Identifies the request (method, path, canonical body); a reuse with another fingerprint is refused.
    public var fingerprint: String
    /// Renders an outcome as the response to store, or nil for outcomes that are not stored.
    public var render: @Sendable (Result<Value, any Error>) -> StoredResponse?

    /// Creates an idempotent request.
    public init(key: IdempotencyKey, fingerprint: String, render: @escaping @Sendable (Result<Value, any Error>) -> StoredResponse?) {
        self.key = key
        self.fingerprint = fingerprint
        self.render = render
    }
}
