import Foundation

/// A request carrying an Idempotency-Key, and how to render its outcome for storage.
public struct IdempotentRequest<Value: Sendable>: Sendable {
    /// The key and its scope.
    public var key: IdempotencyKey
    /// Identifies the request (method, path, canonical body); a reuse with another fingerprint is refused.
    public var fingerprint: String
    /// Renders an outcome as the response to store, or nil for outcomes that are not stored.
    public var render: @Sendable (Result<Value, any Error>) -> StoredResponse?
    /// The request's fingerprint as an earlier release computed it, compared with a stored answer's
    /// when the current one differs (an answer stored before an upgrade).
    public var legacyFingerprint: (@Sendable () -> String)?

    /// Creates an idempotent request.
    public init(
        key: IdempotencyKey, fingerprint: String, legacyFingerprint: (@Sendable () -> String)? = nil,
        render: @escaping @Sendable (Result<Value, any Error>) -> StoredResponse?
    ) {
        self.key = key
        self.fingerprint = fingerprint
        self.legacyFingerprint = legacyFingerprint
        self.render = render
    }

    /// Whether a stored answer's fingerprint is this request's.
    public func matches(_ stored: String) -> Bool {
        stored == fingerprint || legacyFingerprint.map { stored == $0() } == true
    }
}
