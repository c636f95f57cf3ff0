import StockroomCore
import StockroomStorage

/// A `StoreError` (or its absence) as a value a test can compare whole. Free-text messages of
/// `notFound`, `resyncRequired` and `unavailable` are not part of the contract and are dropped.
public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
    case none
    case domain(DomainError)
    case notFound
    case alreadyExists(ItemID)
    case preconditionFailed(currentVersion: Int)
    case idempotencyKeyReused
    case requestInProgress
    case resyncRequired
    case unavailable
    case other(String)

    public init(_ error: any Error) {
        switch error {
        case StoreError.domain(let error): self = .domain(error)
        case StoreError.notFound: self = .notFound
        case StoreError.alreadyExists(let id): self = .alreadyExists(id)
        case StoreError.preconditionFailed(let version): self = .preconditionFailed(currentVersion: version)
        case StoreError.idempotencyKeyReused: self = .idempotencyKeyReused
        case StoreError.requestInProgress: self = .requestInProgress
        case StoreError.resyncRequired: self = .resyncRequired
        case StoreError.unavailable: self = .unavailable
        default: self = .other(String(describing: error))
        }
    }

    public var description: String {
        switch self {
        case .none: "no error"
        case .domain(let error): "domain(\(error))"
        case .notFound: "notFound"
        case .alreadyExists(let id): "alreadyExists(\(id))"
        case .preconditionFailed(let version): "preconditionFailed(currentVersion: \(version))"
        case .idempotencyKeyReused: "idempotencyKeyReused"
        case .requestInProgress: "requestInProgress"
        case .resyncRequired: "resyncRequired"
        case .unavailable: "unavailable"
        case .other(let text): "other(\(text))"
        }
    }
}

/// How `body` fails, or `.none` when it succeeds.
public func failure<T>(_ body: () async throws -> T) async -> Failure {
    do {
        _ = try await body()
        return .none
    } catch {
        return Failure(error)
    }
}
