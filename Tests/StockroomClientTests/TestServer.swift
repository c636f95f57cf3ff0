import Configuration
import Foundation
import Hummingbird
import Logging
import StockroomClient
import StockroomServer
import ServiceLifecycle
import StockroomStore
import Synchronization
import Testing

/// A real Stockroom server, in this process, on a loopback port, that can be stopped and started
/// again on the same database file and port (a server restart, as clients see it).
final class TestServer: Sendable {
    let directory: URL
    let databasePath: String
    /// Editor tokens of one user (erin), as two devices of hers would hold them.
    let editor: String
    let secondEditor: String
    /// A viewer (vera) and an admin (ada).
    let viewer: String
    let admin: String

    private let state = Mutex<(port: Int?, task: Task<Void, any Error>?, group: ServiceGroup?)>((nil, nil, nil))
    private let extraSettings: [AbsoluteConfigKey: ConfigValue]

    /// The feed's heartbeat in these tests: one second, so that a silent stream shows quickly.
    static let settings: [AbsoluteConfigKey: ConfigValue] = [
        "feed.heartbeatSeconds": .init(.int(1), isSecret: false),
        "log.level": .init(.string("critical"), isSecret: false),
    ]

    private init(
        directory: URL, databasePath: String, editor: String, secondEditor: String, viewer: String, admin: String,
        extraSettings: [AbsoluteConfigKey: ConfigValue]
    ) {
        self.extraSettings = extraSettings
        self.directory = directory
        self.databasePath = databasePath
        self.editor = editor
        self.secondEditor = secondEditor
        self.viewer = viewer
        self.admin = admin
    }

    /// A fresh database with tokens, and a server started on it.
    static func start(settings: [AbsoluteConfigKey: ConfigValue] = [:]) async throws -> TestServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-client-\(UUID().uuidString)")
        let path = directory.appendingPathComponent("server/stockroom.sqlite").path
        let tokens: [String] = try await {
            let database = try AppDatabase.open(path: path)
            return [
                try await database.createToken(user: "erin", role: .editor).secret,
                try await database.createToken(user: "erin", role: .editor).secret,
                try await database.createToken(user: "vera", role: .viewer).secret,
                try await database.createToken(user: "ada", role: .admin).secret,
            ]
        }()
        let server = TestServer(
            directory: directory, databasePath: path, editor: tokens[0], secondEditor: tokens[1], viewer: tokens[2], admin: tokens[3],
            extraSettings: settings)
        try await server.start()
        return server
    }

    /// The port the server listens on (the same across restarts).
    var port: Int {
        get throws { try #require(state.withLock { $0.port }) }
    }

    var url: URL {
        get throws { URL(string: "http://127.0.0.1:\(try port)")! }
    }

    /// A client of this server with `token` (the editor's by default).
    func client(token: String? = nil, requestTimeout: Duration = .seconds(30)) throws -> StockroomClient {
        StockroomClient(baseURL: try url, token: token ?? editor, requestTimeout: requestTimeout)
    }

    /// Starts the server, on the port it had before if it ran before; returns once it listens.
    func start() async throws {
        let previous = state.withLock { $0.port }
        var values = Self.settings.merging(extraSettings) { $1 }
        values["db.path"] = .init(.string(databasePath), isSecret: false)
        values["http.port"] = .init(.int(previous ?? 0), isSecret: false)
        let reader = ConfigReader(provider: InMemoryProvider(values: values))
        let (listening, continuation) = AsyncStream<Int>.makeStream()
        let app = try await buildApplication(reader: reader) { _, port in
            continuation.yield(port)
            continuation.finish()
        }
        // Stopped by a graceful shutdown, as SIGTERM stops the real server: the listener closes first.
        // Cancelling the task instead could drop a connection accepted in the meantime before its
        // channel became active, which NIO stops the process for (`NIOAsyncWriter` deinit).
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: Logger(label: "test.server")))
        let task = Task { try await group.run() }
        var iterator = listening.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await task.value
            throw ServerDidNotStart()
        }
        state.withLock { $0 = (port, task, group) }
    }

    /// Stops the server: listening ends and open connections close.
    func stop() async {
        let (task, group) = state.withLock { state in
            defer { (state.task, state.group) = (nil, nil) }
            return (state.task, state.group)
        }
        await group?.triggerGracefulShutdown()
        _ = try? await task?.value
    }

    /// Stops the server and removes its files.
    func shutDown() async {
        await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A path for a client-side file (an offline queue) in this test's folder.
    func clientFile(_ name: String) -> String {
        directory.appendingPathComponent("clients/\(name)").path
    }

    struct ServerDidNotStart: Error {}
}

/// Runs `body` with a fresh server, shutting it down afterwards.
func withServer<Value>(
    settings: [AbsoluteConfigKey: ConfigValue] = [:], isolation: isolated (any Actor)? = #isolation,
    _ body: (TestServer) async throws -> Value
) async throws -> Value {
    let server = try await TestServer.start(settings: settings)
    do {
        let value = try await body(server)
        await server.shutDown()
        return value
    } catch {
        await server.shutDown()
        throw error
    }
}

/// Fast reconnection, and a stream silent for 3 s (three missed heartbeats) counts as dropped.
let testFeedOptions = FeedOptions(heartbeatTimeout: .seconds(3), backoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(500)))
let testStoreOptions = SyncedStore.Options(feed: testFeedOptions, writeBackoff: Backoff(initial: .milliseconds(50), maximum: .milliseconds(500)))

/// Every transport a feed may take; long-polls wait 5 s here.
let testedTransports: [FeedTransport] = [.serverSentEvents, .webSocket, .longPoll(wait: .seconds(5))]

/// `testFeedOptions` over `transport`.
func testFeedOptions(_ transport: FeedTransport) -> FeedOptions {
    var options = testFeedOptions
    options.transport = transport
    return options
}

/// `testStoreOptions` with its feed over `transport`.
func testStoreOptions(_ transport: FeedTransport) -> SyncedStore.Options {
    var options = testStoreOptions
    options.feed.transport = transport
    return options
}

extension Draft {
    static func named(_ name: String, quantity: Int = 1) -> Draft {
        Draft(name: name, color: nil, status: .inStock(quantity: quantity))
    }
}
