import HTTPTypes
import NIOCore
import NIOFoundationCompat
import Foundation
import Hummingbird
import StockroomCore
import StockroomStore

/// An error as the contract writes it: a status and `{"error": {"code", "message", "field", "current"?}}`.
public struct APIError: Error, HTTPResponseError, Sendable {
    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// The stable machine code.
    public var code: String
    /// What went wrong, for people.
    public var message: String
    /// The offending field or parameter, if one.
    public var field: String?
    /// The current item, for a `409 conflict`.
    public var current: Item?
    /// Extra headers (`WWW-Authenticate`, `Allow`).
    public var headers: HTTPFields = [:]

    /// Creates an error.
    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, field: String? = nil, current: Item? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.current = current
    }

    static func unauthorized(_ message: String) -> APIError {
        var error = APIError(.unauthorized, "unauthorized", message)
        error.headers[.wwwAuthenticate] = "Bearer"
        return error
    }

    static func forbidden(_ message: String) -> APIError { APIError(.forbidden, "forbidden", message) }
    static func invalidParameter(_ name: String, _ message: String) -> APIError {
        APIError(.badRequest, "invalidParameter", message, field: name)
    }
    static func invalidJSON(_ message: String, field: String? = nil) -> APIError {
        APIError(.badRequest, "invalidJSON", message, field: field)
    }
    static func notFound(_ message: String) -> APIError { APIError(.notFound, "notFound", message) }

    /// `422` unless `value` lies in `range`; absent values take `defaultValue`.
    static func checked(_ name: String, _ value: Int?, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let value else { return defaultValue }
        guard range.contains(value) else {
            throw validationFailed(name, "\(name) must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return value
    }
    static func validationFailed(_ name: String?, _ message: String) -> APIError {
        APIError(.unprocessableContent, "validationFailed", message, field: name)
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
            self.init(.contentTooLarge, "payloadTooLarge", "request body is larger than 1 MiB")
        case is CancellationError:
            // Only shutdown cancels a request: what a client still held open when time ran out.
            self.init(.serviceUnavailable, "unavailable", "the server is shutting down")
        default:
            self.init(.internalServerError, "internal", "internal error")
        }
    }

    init(store error: StoreError) {
        switch error {
        case .domain(let error): self.init(domain: error)
        case .notFound(let message): self.init(.notFound, "notFound", message)
        case .alreadyExists(let id): self.init(.conflict, "alreadyExists", "an item with id \(id) exists or existed")
        case .preconditionFailed(let version):
            self.init(.preconditionFailed, "preconditionFailed", "If-Match does not match the current version \(version)")
        case .idempotencyKeyReused:
            self.init(.unprocessableContent, "idempotencyKeyReused", "this Idempotency-Key was used with a different request")
        case .requestInProgress:
            self.init(.conflict, "requestInProgress", "a request with this Idempotency-Key is still running")
        case .resyncRequired(let message): self.init(.gone, "resyncRequired", message)
        case .unavailable(let message): self.init(.serviceUnavailable, "unavailable", message)
        }
    }

    init(domain error: DomainError) {
        switch error {
        case .validationFailed(let field, let message):
            self.init(.unprocessableContent, error.code, message, field: field)
        case .invalidTransition, .itemNotFound, .clientNotFound, .itemDeleted:
            self.init(error.code == "notFound" ? .notFound : .conflict, error.code, error.message)
        case .conflict(let current):
            self.init(.conflict, error.code, error.message, current: current)
        }
    }

    init(http error: HTTPError) {
        let code: String =
            switch error.status {
            case .notFound: "notFound"
            case .contentTooLarge: "payloadTooLarge"
            case .methodNotAllowed: "methodNotAllowed"
            case .unsupportedMediaType: "unsupportedMediaType"
            case .badRequest: "invalidJSON"
            case .unauthorized: "unauthorized"
            case .forbidden: "forbidden"
            default: Self.codeName(error.status.reasonPhrase)
            }
        let message: String =
            switch error.status {
            case .notFound: "no such route"
            case .contentTooLarge: "request body is larger than 1 MiB"
            default: error.body ?? error.status.reasonPhrase
            }
        self.init(error.status, code, message)
        headers = error.headers
        if error.status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
    }

    /// `Method Not Allowed` -> `methodNotAllowed`.
    static func codeName(_ phrase: String) -> String {
        let words = phrase.split(whereSeparator: { !$0.isLetter && !$0.isNumber })
        guard let first = words.first else { return "error" }
        return first.lowercased() + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }.joined()
    }

    /// Whether the contract stores this outcome for idempotent retries (404, 409, 412, 422).
    var isDecided: Bool {
        [.notFound, .conflict, .preconditionFailed, .unprocessableContent].contains(status) && code != "requestInProgress"
    }

    /// The error as a response body and headers.
    var reply: Reply {
        var headers = self.headers
        headers[.contentType] = Reply.jsonContentType
        return Reply(status: status, headers: headers, body: Body(error: self).json)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        reply.response
    }

    private struct Body: Encodable {
        let error: APIError

        struct Payload: Encodable {
            let code: String
            let message: String
            let field: String?
            let current: Item?

            enum CodingKeys: String, CodingKey { case code, message, field, current }

            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(code, forKey: .code)
                try c.encode(message, forKey: .message)
                try c.encode(field, forKey: .field)
                if let current { try c.encode(current, forKey: .current) }
            }
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(Payload(code: error.code, message: error.message, field: error.field, current: error.current), forKey: .error)
        }

        enum CodingKeys: String, CodingKey { case error }

        var json: ByteBuffer {
            ByteBuffer(data: (try? JSONCoding.encoder().encode(self)) ?? Data(#"{"error":{"code":"internal","message":"internal error","field":null}}"#.utf8))
        }
    }
}
