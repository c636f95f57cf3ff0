/// The contract's error codes (the `Error` schema's `code` in the OpenAPI document), as the body's `{"error": {"code"}}` writes them:
/// the server answers with them and the client reads them, from this one list.
public enum ErrorCode: Hashable, Sendable, CustomStringConvertible {
    case invalidJSON, invalidParameter, invalidRequest
    case unauthorized, forbidden, notFound, methodNotAllowed
    case conflict, itemDeleted, invalidTransition, alreadyExists, requestInProgress
    case resyncRequired, preconditionFailed, payloadTooLarge, unsupportedMediaType
    case validationFailed, idempotencyKeyReused, upgradeRequired, tooManyRequests, unavailable, `internal`
    /// A code outside the table: the server names one after an unusual status's reason phrase
    /// (`Request Timeout` -> `requestTimeout`), and a client keeps a code it does not know yet.
    case other(String)

    /// Every code of the contract's table.
    public static let known: [ErrorCode] = [
        .invalidJSON, .invalidParameter, .invalidRequest,
        .unauthorized, .forbidden, .notFound, .methodNotAllowed,
        .conflict, .itemDeleted, .invalidTransition, .alreadyExists, .requestInProgress,
        .resyncRequired, .preconditionFailed, .payloadTooLarge, .unsupportedMediaType,
        .validationFailed, .idempotencyKeyReused, .upgradeRequired, .tooManyRequests, .unavailable, .internal,
    ]

    /// The code `rawValue` names: one of the table's, or `other`.
    public init(rawValue: String) {
        self = Self.byName[rawValue] ?? .other(rawValue)
    }

    private static let byName: [String: ErrorCode] = Dictionary(uniqueKeysWithValues: known.map { ($0.rawValue, $0) })

    /// The code as the wire writes it.
    public var rawValue: String {
        switch self {
        case .invalidJSON: "invalidJSON"
        case .invalidParameter: "invalidParameter"
        case .invalidRequest: "invalidRequest"
        case .unauthorized: "unauthorized"
        case .forbidden: "forbidden"
        case .notFound: "notFound"
        case .methodNotAllowed: "methodNotAllowed"
        case .conflict: "conflict"
        case .itemDeleted: "itemDeleted"
        case .invalidTransition: "invalidTransition"
        case .alreadyExists: "alreadyExists"
        case .requestInProgress: "requestInProgress"
        case .resyncRequired: "resyncRequired"
        case .preconditionFailed: "preconditionFailed"
        case .payloadTooLarge: "payloadTooLarge"
        case .unsupportedMediaType: "unsupportedMediaType"
        case .validationFailed: "validationFailed"
        case .idempotencyKeyReused: "idempotencyKeyReused"
        case .upgradeRequired: "upgradeRequired"
        case .tooManyRequests: "tooManyRequests"
        case .unavailable: "unavailable"
        case .internal: "internal"
        case .other(let name): name
        }
    }

    public var description: String { rawValue }

    /// The HTTP status the contract answers this code with; nil for `other`, which keeps its own.
    /// (An SSE `error` event carries only the code: a client takes the status from here.)
    public var httpStatus: Int? {
        switch self {
        case .invalidJSON, .invalidParameter, .invalidRequest: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .conflict, .itemDeleted, .invalidTransition, .alreadyExists, .requestInProgress: 409
        case .resyncRequired: 410
        case .preconditionFailed: 412
        case .payloadTooLarge: 413
        case .unsupportedMediaType: 415
        case .validationFailed, .idempotencyKeyReused: 422
        case .upgradeRequired: 426
        case .tooManyRequests: 429
        case .unavailable: 503
        case .internal: 500
        case .other: nil
        }
    }

    /// `Method Not Allowed` -> `methodNotAllowed`: the code of a status outside the table.
    public static func named(afterReasonPhrase phrase: String) -> ErrorCode {
        let words = phrase.split(whereSeparator: { !$0.isLetter && !$0.isNumber })
        guard let first = words.first else { return .other("error") }
        let name = first.lowercased() + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }.joined()
        return .other(name)
    }
}
