import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// A typed client of one Stockroom server, acting with one bearer token.
///
/// Every method is one request of the HTTP contract; a refusal throws ``StockroomError`` with the
/// contract's code, and a network failure throws ``TransportError``. The client holds no state of
/// its own, so it is a value that any task may share.
public struct StockroomClient: Sendable {
    /// The server, e.g. `http://127.0.0.1:8080`.
    public let baseURL: URL
    /// How long one plain request may take before it fails with a `TransportError`.
    public var requestTimeout: Duration
    let token: String
    let httpClient: HTTPClient
    private let root: String

    /// A client of the server at `baseURL` acting with `token`. Requests go through `httpClient`
    /// (by default ``defaultHTTPClient``, shared by the process).
    public init(baseURL: URL, token: String, httpClient: HTTPClient = defaultHTTPClient, requestTimeout: Duration = .seconds(30)) {
        self.baseURL = baseURL
        self.token = token
        self.httpClient = httpClient
        self.requestTimeout = requestTimeout
        var root = baseURL.absoluteString
        while root.hasSuffix("/") { root.removeLast() }
        self.root = root
    }

    /// The HTTP client every `StockroomClient` uses unless given another: AsyncHTTPClient's shared
    /// configuration, except that a refused connection fails at once instead of being retried until
    /// the connect timeout: the feed and the command queue retry on their own, with backoff, and
    /// must notice that the server is down to say "offline".
    public static let defaultHTTPClient: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(10)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// A raw answer.
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: Data

        var isSuccess: Bool { (200..<300).contains(status) }

        /// The `Retry-After` header in seconds, if present.
        var retryAfter: Duration? { StockroomClient.retryAfter(headers) }
    }

    /// The URL of `path` (which starts with `/`) with `query`'s present values, percent-encoded.
    func url(_ path: String, query: [(String, String?)] = []) -> String {
        let pairs = query.compactMap { name, value in value.map { "\(name)=\(Self.encodeQueryValue($0))" } }
        return root + path + (pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&"))
    }

    private static let queryValueAllowed: CharacterSet = {
        var set = CharacterSet.urlQueryAllowed
        set.remove(charactersIn: "&=+?#")
        return set
    }()

    static func encodeQueryValue(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: queryValueAllowed) ?? value
    }

    static func encodePathSegment(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? value
    }

    /// Opens one request with the token and returns the response as it starts, its body still to
    /// read: the one place requests are made, for plain calls (`send`) and the feed's stream alike.
    /// A refused connection never carried the request, so it is tried once more (it matters right
    /// after a server comes back: the pool may fail a new request with the refusal of a connection
    /// attempt that started while the server was down); any other failure throws `TransportError`.
    func open(
        _ method: HTTPMethod, _ path: String, query: [(String, String?)] = [], headers: [(String, String)] = [],
        accept: String = "application/json", json: Data? = nil
    ) async throws -> HTTPClientResponse {
        var request = HTTPClientRequest(url: url(path, query: query))
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: accept)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: json))
        }
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await httpClient.execute(request, timeout: .init(requestTimeout))
            } catch let error as CancellationError {
                throw error
            } catch {
                if Task.isCancelled { throw CancellationError() }
                if attempt == 1, Self.isRefusedConnection(error) { continue }
                throw TransportError("no answer from \(method) \(path)", underlying: error)
            }
        }
    }

    /// Sends one request and reads the whole answer; throws `TransportError` when no answer came.
    func send(
        _ method: HTTPMethod, _ path: String, query: [(String, String?)] = [], json: Data? = nil, headers: [(String, String)] = []
    ) async throws -> Answer {
        let response = try await open(method, path, query: query, headers: headers, json: json)
        do {
            let body = try await response.body.collect(upTo: 256 << 20)
            return Answer(status: Int(response.status.code), headers: response.headers, body: Data(buffer: body))
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw TransportError("no answer from \(method) \(path)", underlying: error)
        }
    }

    /// The `Retry-After` header in seconds, if present.
    static func retryAfter(_ headers: HTTPHeaders) -> Duration? {
        headers.first(name: "Retry-After").flatMap { Int($0) }.map { .seconds($0) }
    }

    static func isRefusedConnection(_ error: any Error) -> Bool {
        if let error = error as? IOError { return error.errnoCode == ECONNREFUSED }
        return false
    }

    /// Sends one request and decodes a successful answer's body; throws `StockroomError` for any other status.
    func call<Value: Decodable>(
        _ type: Value.Type, _ method: HTTPMethod, _ path: String, query: [(String, String?)] = [], json: Data? = nil,
        headers: [(String, String)] = []
    ) async throws -> (value: Value, answer: Answer) {
        let answer = try await send(method, path, query: query, json: json, headers: headers)
        try Self.check(answer)
        return (try Self.decode(Value.self, from: answer.body), answer)
    }

    /// Throws the contract error an answer carries, if it is not a success.
    static func check(_ answer: Answer) throws {
        guard answer.isSuccess else {
            throw StockroomError(status: answer.status, body: answer.body, retryAfter: answer.retryAfter)
        }
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value {
        do {
            return try JSONCoding.decoder().decode(Value.self, from: data)
        } catch {
            throw TransportError("the server's answer does not decode as \(Value.self)", underlying: error)
        }
    }

    static func encode(_ value: some Encodable) throws -> Data {
        try JSONCoding.encoder().encode(value)
    }

    /// `"3"`, the ETag of version 3.
    static func entityTag(_ version: Int) -> String { "\"\(version)\"" }

    /// A fresh idempotency key.
    public static func newIdempotencyKey() -> String { UUID().uuidString.lowercased() }
}

extension StockroomClient {
    /// Who this token acts for (`GET /v1/users/me`).
    public func identity() async throws -> Identity {
        try await call(Identity.self, .GET, "/v1/users/me").value
    }

    /// Whether the server answers at all (`GET /health`, no token needed).
    public func isHealthy() async -> Bool {
        (try? await send(.GET, "/health").status) == 200
    }
}
