import Foundation
import StockroomCore

/// Why the store refused or failed a request; each case has a stable code.
public enum StoreError: Error, Sendable {
    /// The domain refused the command or value.
    case domain(DomainError)
    /// The named item, client or token does not exist for the caller.
    case notFound(String)
    /// An item with this id exists or once existed.
    case alreadyExists(ItemID)
    /// `If-Match` did not match the current version.
    case preconditionFailed(currentVersion: Int)
    /// The idempotency key was used before with a different request.
    case idempotencyKeyReused
    /// A request with the same idempotency key is still running.
    case requestInProgress
    /// A feed cursor cannot be served; the client must resync from a snapshot.
    case resyncRequired(String)
    /// Storage cannot be written; nothing was half-written.
    case unavailable(String)
}
