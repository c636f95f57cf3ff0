import Foundation

/// An error the server decided, as the contract writes it: a status, a stable code, a message, the
/// offending field, and for conflicts the server's current value.
public struct StockroomError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The contract's machine codes (StockroomCore's `ErrorCode`, the list the server answers from);
    /// a code this SDK does not know yet is kept as `other`.
    public typealias Code = ErrorCode

    /// The HTTP status.
    public var status: Int
    /// The stable machine code.
    public var code: Code
    /// What went wrong, for people.
    public var message: String
    /// The offending field or parameter, if the server named one.
    public var field: String?
    /// The server's current item: with `409 conflict` (from the body), and with `412` on an item
    /// (read right after the refusal).
    public var currentItem: Item?
    /// The server's current navigation, with `412` on a navigation write (read right after the refusal).
    public var currentNavigation: Navigation?
    /// How long the server asked to wait before trying again (`Retry-After`), if it did.
    public var retryAfter: Duration?

    /// Creates an error.
    public init(
        status: Int, code: Code, message: String, field: String? = nil,
        currentItem: Item? = nil, currentNavigation: Navigation? = nil, retryAfter: Duration? = nil
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.currentItem = currentItem
        self.currentNavigation = currentNavigation
        self.retryAfter = retryAfter
    }

    /// The version the server holds now, when the error carries the current value.
    public var currentVersion: Int? { currentItem?.version ?? currentNavigation?.version }

    /// Whether the server decided against the request for good, so sending it again cannot help:
    /// every 4xx except `requestInProgress` (the first attempt still runs), `tooManyRequests` and
    /// `unauthorized` (the token may be replaced), and except 5xx.
    public var isRefusal: Bool {
        switch code {
        case .requestInProgress, .tooManyRequests, .unauthorized, .unavailable: false
        default: (400..<500).contains(status)
        }
    }

    /// Whether the server failed on the request itself (500, 502, 504 and the like): not `503
    /// unavailable` or `429`, which say when to come back.
    public var isServerError: Bool {
        status >= 500 && status != 503 && code != .unavailable && code != .tooManyRequests
    }

    public var description: String {
        "\(status) \(code)" + (field.map { " (\($0))" } ?? "") + ": \(message)"
    }
}

/// The server could not be reached or answered with something that is not the contract
/// (a dropped connection, a refused connection, a timeout, a body that does not decode).
public struct TransportError: Error, Sendable, CustomStringConvertible {
    /// What happened, for people.
    public var message: String
    /// The underlying error, if one.
    public var underlying: (any Error)?

    /// Creates a transport error.
    public init(_ message: String, underlying: (any Error)? = nil) {
        self.message = message
        self.underlying = underlying
    }

    public var description: String {
        underlying.map { "\(message): \($0)" } ?? message
    }
}

extension StockroomError {
    /// The error a response's status and body describe; a body that is not the contract's still
    /// gives an error with the status and a code named after it.
    init(status: Int, body: Data, retryAfter: Duration?) {
        if let decoded = try? JSONCoding.decoder().decode(ErrorBody.self, from: body) {
            self.init(
                status: status, code: decoded.error.code, message: decoded.error.message,
                field: decoded.error.field, currentItem: decoded.error.current, retryAfter: retryAfter)
        } else {
            let text = String(decoding: body.prefix(200), as: UTF8.self)
            self.init(status: status, code: .other("http\(status)"), message: text.isEmpty ? "HTTP \(status)" : text, retryAfter: retryAfter)
        }
    }
}
