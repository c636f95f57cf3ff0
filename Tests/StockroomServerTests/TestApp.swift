import Configuration
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import StockroomWire
import StockroomServer
import StockroomStore
import Testing

/// A server built by `buildApplication(reader:)` on a fresh SQLite file, with a token per role.
struct TestApp {
    let directory: URL
    let databasePath: String
    /// A second connection pool on the same file, as the CLI would open it.
    let database: AppDatabase
    let editor: String
    let viewer: String
    let admin: String
    /// An editor of another user.
    let otherEditor: String
    let viewerUser = "vera"

    static func make() async throws -> TestApp {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-tests-\(UUID().uuidString)")
        let path = directory.appendingPathComponent("nested/stockroom.sqlite").path
        let database = try AppDatabase.open(path: path)
        return TestApp(
            directory: directory,
            databasePath: path,
            database: database,
            editor: try await database.createToken(user: "erin", role: .editor).secret,
            viewer: try await database.createToken(user: "vera", role: .viewer).secret,
            admin: try await database.createToken(user: "ada", role: .admin).secret,
            otherEditor: try await database.createToken(user: "otto", role: .editor).secret
        )
    }

    /// The configuration the tests run the server with.
    func reader(extra: [AbsoluteConfigKey: ConfigValue] = [:]) -> ConfigReader {
        var values: [AbsoluteConfigKey: ConfigValue] = [
            "db.path": .init(.string(databasePath), isSecret: false),
            "http.port": .init(.int(0), isSecret: false),
            "log.level": .init(.string("error"), isSecret: false),
        ]
        values.merge(extra) { $1 }
        return ConfigReader(provider: InMemoryProvider(values: values))
    }

    /// Runs `body` against the in-process router.
    func test<Value: Sendable>(
        settings extra: [AbsoluteConfigKey: ConfigValue] = [:],
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        let app = try await buildApplication(reader: reader(extra: extra))
        return try await app.test(.router, body)
    }

    /// Runs `body` against a live server on loopback.
    ///
    /// Hummingbird's live test client opens its one connection before `body` runs, and a test may
    /// do other work (raw sockets, a second server) before or between its requests: the header and
    /// idle timeouts are raised so that the server does not close that connection while a loaded
    /// machine runs that work. A test of a timeout sets its own.
    func live<Value: Sendable>(
        settings extra: [AbsoluteConfigKey: ConfigValue] = [:],
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        var extra = extra
        for key: AbsoluteConfigKey in ["http.headerTimeoutSeconds", "http.idleTimeoutSeconds"] where extra[key] == nil {
            extra[key] = .init(.int(3600), isSecret: false)
        }
        let app = try await buildApplication(reader: reader(extra: extra))
        return try await app.test(.live, body)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with a fresh test app, removing its files afterwards.
func withTestApp<Value>(_ body: (TestApp) async throws -> Value) async throws -> Value {
    let app = try await TestApp.make()
    defer { app.cleanUp() }
    return try await body(app)
}

extension TestClientProtocol {
    /// Sends a request with an optional bearer token and JSON body.
    @discardableResult
    func send(
        _ method: HTTPRequest.Method,
        _ uri: String,
        token: String? = nil,
        json: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers = headers
        if let token { headers[.authorization] = "Bearer \(token)" }
        if json != nil, headers[.contentType] == nil { headers[.contentType] = "application/json" }
        return try await execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
    }
}

extension TestResponse {
    /// The body decoded with the contract's JSON decoder.
    func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONCoding.decoder().decode(T.self, from: Data(buffer: body))
    }

    /// The body as a JSON object.
    var json: [String: Any] {
        get throws {
            let object = try JSONSerialization.jsonObject(with: Data(buffer: body))
            return try #require(object as? [String: Any])
        }
    }

    /// The error code of a contract error body.
    var errorCode: String? {
        (try? json["error"] as? [String: Any])?["code"] as? String
    }

    /// The error body's `field`.
    var errorField: String? {
        (try? json["error"] as? [String: Any])?["field"] as? String
    }
}

/// JSON for a draft-shaped body.
func draftJSON(name: String, quantity: Int? = 1, backOrdered: Bool = false, color: String? = nil, id: String? = nil) -> String {
    var object: [String: Any] = ["name": name]
    if let id { object["id"] = id }
    if let color { object["color"] = ["name": color, "red": 0.5, "green": 0.25, "blue": 1] }
    if let quantity {
        object["status"] = ["inStock": ["quantity": quantity]]
    } else {
        object["status"] = ["outOfStock": ["isOnBackOrder": backOrdered]]
    }
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}
