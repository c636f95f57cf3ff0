import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOFoundationCompat
import Foundation
import Hummingbird
import StockroomCore
import StockroomWire
import StockroomStorage

/// An error as the contract writes it: a status and `{"error": {"code", "message", "field", "current"?}}`.
///
/// Every failure of every layer becomes one of these by its case (``init(_:)``), and ``json(maxBytes:)``
/// is the one place its body is written: plain HTTP answers, the SSE `error` event, WebSocket close
/// reasons and the answers the NIO pipeline gives before a request reaches the router.
public struct APIError: Error, HTTPResponseError, Sendable {
    /// The contract's error codes (StockroomWire's `ErrorCode`, shared with the client).
    public typealias Code = ErrorCode

    /// The stable machine code.
    public var code: Code
    /// What went wrong, for people.
    public var message: String
    /// The offending field or parameter, if one.
    public var field: String?
    /// The current item, for a `409 conflict`.
    public var current: Item?
    /// Extra headers (`WWW-Authenticate`, `Allow`, `Retry-After`).
    public var headers: HTTPFields = [:]

    /// The HTTP status: the contract's for its codes; for `other`, the status it was named after.
    public var status: HTTPResponse.Status { code.status ?? otherStatus }
    private var otherStatus: HTTPResponse.Status = .internalServerError

    /// Creates an error. An `unavailable` says when to try again: `Retry-After: 1` (a refusal over
    /// a cap sets its own).
    public init(_ code: Code, _ message: String, field: String? = nil, current: Item? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.current = current
        if code == .unavailable { headers[.retryAfter] = "1" }
    }

    static func unauthorized(_ message: String) -> APIError {
        var error = APIError(.unauthorized, message)
        error.headers[.wwwAuthenticate] = "Bearer"
        return error
    }

    static func forbidden(_ message: String) -> APIError { APIError(.forbidden, message) }
    static func invalidParameter(_ name: String, _ message: String) -> APIError {
        APIError(.invalidParameter, message, field: name)
    }
    /// A query parameter given more than once: which value was meant cannot be told.
    static func repeatedParameter(_ name: String) -> APIError {
        invalidParameter(name, "\(name) is given more than once; give it once")
    }
    static func invalidJSON(_ message: String, field: String? = nil) -> APIError {
        APIError(.invalidJSON, message, field: field)
    }
    static func notFound(_ message: String) -> APIError { APIError(.notFound, message) }

    /// What a client sent, for a message: cut to 64 characters (and `...`), so that an answer
    /// never echoes a path of any length back.
    static func quoted(_ sent: String) -> String { sent.count > 64 ? sent.prefix(64) + "..." : sent }

    /// `422` unless `value` lies in `range`; absent values take `defaultValue`.
    static func checked(_ name: String, _ value: Int?, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let value else { return defaultValue }
        guard range.contains(value) else {
            throw validationFailed(name, "\(name) must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return value
    }
    static func validationFailed(_ name: String?, _ message: String) -> APIError {
        APIError(.validationFailed, message, field: name)
    }

    /// The contract's error for any error thrown while handling a request.
    public init(_ error: any Error) {
        switch error {
        case let error as APIError:
            self = error
        case let error as StoreError:
            self.init(store: error)
        case let error as DomainError:
            self.init(domain: error)
        case let error as HTTPError:
            self.init(http: error)
        case is NIOTooManyBytesError:
            self.init(.payloadTooLarge, "request body is larger than 1 MiB")
        case is HTTPParserError:
            // A body that does not parse (a bad chunk size) or ends early (the client went, or was
            // closed for stalling): the client's doing, answered like a head that does not parse.
            self.init(.invalidRequest, "the request is not valid HTTP/1.1")
        case let error as BodyClock.TooSlow:
            self.init(http: HTTPError(.requestTimeout, message: error.message))
        case let error as IOError where Self.clientDropped.contains(error.errnoCode):
            // The client's connection reset while its body was read (a phone that lost its network):
            // the client's doing, as a body that ends early is; no one reads the answer.
            self.init(.invalidRequest, "the connection was reset before the request's body was read")
        case is CancellationError:
            // Only shutdown cancels a request: what a client still held open when time ran out.
            self.init(.unavailable, "the server is shutting down")
        default:
            self.init(.internal, "internal error")
        }
    }

    /// The errors of a socket its client dropped: reset, or closed under a write.
    static let clientDropped: Set<Int32> = [ECONNRESET, EPIPE, ECONNABORTED]

    init(store error: StoreError) {
        switch error {
        case .domain(let error): self.init(domain: error)
        case .notFound(let message): self.init(.notFound, message)
        case .alreadyExists(let id): self.init(.alreadyExists, "an item with id \(id) exists or existed")
        case .preconditionFailed(let version):
            self.init(.preconditionFailed, "If-Match does not match the current version \(version)")
        case .idempotencyKeyReused:
            self.init(.idempotencyKeyReused, "this Idempotency-Key was used with a different request")
        case .requestInProgress:
            self.init(.requestInProgress, "a request with this Idempotency-Key is still running")
        case .resyncRequired(let message): self.init(.resyncRequired, message)
        case .unavailable(let message): self.init(.unavailable, message)
        }
    }

    init(domain error: DomainError) {
        switch error {
        case .validationFailed(let field, let message): self.init(.validationFailed, message, field: field)
        case .invalidTransition: self.init(.invalidTransition, error.message)
        case .itemNotFound, .clientNotFound: self.init(.notFound, error.message)
        case .itemDeleted: self.init(.itemDeleted, error.message)
        case .conflict(let current): self.init(.conflict, error.message, current: current)
        }
    }

    init(http error: HTTPError) {
        let code: Code =
            switch error.status {
            case .notFound: .notFound
            case .contentTooLarge: .payloadTooLarge
            case .methodNotAllowed: .methodNotAllowed
            case .unsupportedMediaType: .unsupportedMediaType
            case .badRequest: .invalidJSON
            case .unauthorized: .unauthorized
            case .forbidden: .forbidden
            default: .named(afterReasonPhrase: error.status.reasonPhrase)
            }
        let message: String =
            switch error.status {
            case .notFound: "no such route"
            case .contentTooLarge: "request body is larger than 1 MiB"
            default: error.body ?? error.status.reasonPhrase
            }
        self.init(code, message)
        otherStatus = error.status
        headers = error.headers
        if error.status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
    }

    /// Whether the contract stores this outcome for idempotent retries (404, 409, 412, 422).
    var isDecided: Bool {
        [.notFound, .conflict, .preconditionFailed, .unprocessableContent].contains(status) && code != .requestInProgress
    }

    /// The error as a response body and headers.
    var reply: Reply {
        var headers = self.headers
        headers[.contentType] = Reply.jsonContentType
        return Reply(status: status, headers: headers, body: ByteBuffer(string: json()))
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        reply.response
    }

    /// The contract's error body (`ErrorJSON`); with `maxBytes`, shortened to fit.
    public func json(maxBytes: Int? = nil) -> String {
        ErrorJSON.body(code: code, message: message, field: field, current: current, maxBytes: maxBytes)
    }
}

extension APIError {
    /// A refused item of a batch answer: the status and error a single create would have answered.
    var batchResult: BatchResultsJSON.Result {
        .refused(status: status.code, ErrorBody.Object(code: code, message: message, field: field, current: current))
    }
}

extension ErrorCode {
    /// The status the contract answers this code with (`httpStatus`, the wire's table), by its name;
    /// nil for `other`, which keeps its own.
    var status: HTTPResponse.Status? {
        httpStatus.map { code in Self.contractStatuses.first { $0.code == code } ?? HTTPResponse.Status(code: code) }
    }

    /// The statuses the contract answers with, with their reason phrases.
    private static let contractStatuses: [HTTPResponse.Status] = [
        .badRequest, .unauthorized, .forbidden, .notFound, .methodNotAllowed, .conflict, .gone, .preconditionFailed,
        .contentTooLarge, .unsupportedMediaType, .unprocessableContent, HTTPResponse.Status(code: 426, reasonPhrase: "Upgrade Required"),
        .tooManyRequests, .internalServerError, .serviceUnavailable,
    ]
}
