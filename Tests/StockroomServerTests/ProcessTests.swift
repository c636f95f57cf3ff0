import AsyncHTTPClient
import GRDB
import HummingbirdWSClient
import Logging
import Foundation
import NIOCore
import StockroomCore
import StockroomStore
import StockroomWire
import TestSupport
import Testing

@Suite("The stockroom binary", .serialized)
struct ProcessTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stockroom-process-\(UUID().uuidString)")
    var databasePath: String { directory.appendingPathComponent("db/stockroom.sqlite").path }

    init() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    @Test func migrateAndTokenCommandsCreateTheDatabaseFromAnyDirectory() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let migrate = try await StockroomProcess.run(["migrate", "--db-path", databasePath], in: directory)
        #expect(migrate.status == 0)
        #expect(FileManager.default.fileExists(atPath: databasePath))
        // The folder it created is the owner's alone, as the files in it are.
        let folderMode = try #require(
            FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("db").path)[.posixPermissions] as? Int)
        #expect(folderMode & 0o777 == 0o700)

        let create = try await StockroomProcess.run(["token", "create", "--user", "ada", "--role", "admin", "--db-path", databasePath], in: directory)
        #expect(create.status == 0)
        let secret = try #require(create.output.split(separator: "\n").last.map(String.init))
        #expect(secret.hasPrefix("sr_") && !secret.contains(" "))

        let list = try await StockroomProcess.run(["token", "list", "--db-path", databasePath], in: directory)
        #expect(list.output.contains("\tada\tadmin\t"))
        #expect(!list.output.contains(secret))
        let id = try #require(list.output.split(separator: "\t").first.map(String.init))
        #expect(try await StockroomProcess.run(["token", "revoke", id, "--db-path", databasePath], in: directory).status == 0)
        #expect(try await StockroomProcess.run(["token", "list", "--db-path", databasePath], in: directory).output.contains("revoked"))
        let missing = try await StockroomProcess.run(["token", "revoke", "tok_missing", "--db-path", databasePath], in: directory, environment: [:])
        #expect(missing.status == 1 && missing.error.contains("no token tok_missing"), "a failure, not a usage error: \(missing.error)")
        #expect(try await StockroomProcess.run(["token", "create", "--user", "x", "--role", "root", "--db-path", databasePath], in: directory).status != 0)
    }

    /// Requests read no token (verified ones are kept in memory); a running server learns of a
    /// revocation by the CLI, another process, by reading the token generation, and
    /// `token revoke` returns only once servers have had time to.
    @Test(.timeLimit(.minutes(10)))
    func aTokenRevokedWithTheCLIIsRefusedByARunningServer() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let created = try await StockroomProcess.run(["token", "create", "--user", "erin", "--role", "editor", "--db-path", databasePath], in: directory)
        let token = try #require(created.output.split(separator: "\n").last.map(String.init))
        let server = try await StockroomProcess.serve(databasePath: databasePath, in: directory)
        func status() async throws -> Int {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/v1/items")
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            return Int(try await HTTPClient.shared.execute(request, timeout: .seconds(30)).status.code)
        }
        #expect(try await status() == 200)
        let list = try await StockroomProcess.run(["token", "list", "--db-path", databasePath], in: directory)
        let id = try #require(list.output.split(separator: "\t").first.map(String.init))
        #expect(try await StockroomProcess.run(["token", "revoke", id, "--db-path", databasePath], in: directory).status == 0)
        #expect(try await status() == 401)
        kill(server.process.processIdentifier, SIGTERM)
        #expect(await server.waitForExit() == 0)
    }

    /// The global executor is chosen before anything runs, from the command line or the
    /// environment: by default NIO's event loops; `default` leaves Swift's own pool. The real
    /// binary is started each way, says which at startup, and answers a write and a read.
    @Test(.timeLimit(.minutes(10)), arguments: [
        (nil as String?, [] as [String], "event loops, as the generic executor"),
        ("default", [], "Swift's default pool"),
        ("eventloops", [], "event loops, as the generic executor"),
        ("eventloops", ["--global-executor", "default"], "Swift's default pool"),
    ])
    func theGlobalExecutorIsChosenAtStartup(variable: String?, flags: [String], expected: String) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let created = try await StockroomProcess.run(["token", "create", "--user", "erin", "--role", "editor", "--db-path", databasePath], in: directory)
        let token = try #require(created.output.split(separator: "\n").last.map(String.init))
        let server = try await StockroomProcess.serve(
            databasePath: databasePath, in: directory, extra: flags,
            shellPrefix: variable.map { "export GLOBAL_EXECUTOR=\($0)" } ?? "unset GLOBAL_EXECUTOR")
        defer { kill(server.process.processIdentifier, SIGKILL) }
        let log = try await server.waitForOutput(containing: "global executor")
        let line = try #require(log.split(separator: "\n").first { $0.contains("global executor") })
        #expect(line.contains(expected), "\(line)")

        var create = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/v1/items")
        create.method = .POST
        create.headers.add(name: "Authorization", value: "Bearer \(token)")
        create.headers.add(name: "Content-Type", value: "application/json")
        create.body = .bytes(ByteBuffer(string: #"{"name":"Lamp","color":null,"status":{"inStock":{"quantity":1}}}"#))
        #expect(try await HTTPClient.shared.execute(create, timeout: .seconds(30)).status.code == 201)
        var list = HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/v1/items")
        list.headers.add(name: "Authorization", value: "Bearer \(token)")
        let page = try await HTTPClient.shared.execute(list, timeout: .seconds(30))
        #expect(page.status.code == 200)
        #expect(String(buffer: try await page.body.collect(upTo: 1 << 20)).contains(#""name":"Lamp""#))
        kill(server.process.processIdentifier, SIGTERM)
        #expect(await server.waitForExit() == 0)
    }

    @Test func anUnknownGlobalExecutorIsAUsageError() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let byVariable = try await StockroomProcess.run(
            ["migrate", "--db-path", databasePath], in: directory, environment: ["GLOBAL_EXECUTOR": "threads"])
        #expect(byVariable.status == 64)
        #expect(byVariable.error.contains(#"invalid setting global executor (environment variable GLOBAL_EXECUTOR): "threads"; expected one of eventloops, default"#))
        let byFlag = try await StockroomProcess.run(["serve", "--global-executor", "x", "--db-path", databasePath], in: directory, environment: [:])
        #expect(byFlag.status == 64)
        #expect(byFlag.error.contains(#"(flag --global-executor): "x""#))
        #expect(!FileManager.default.fileExists(atPath: databasePath), "nothing ran")
    }

    /// The SQLite-file commands refuse a PostgreSQL database by name, before they connect, and say
    /// what does their work there.
    @Test func backupOnPostgreSQLIsAUsageErrorThatNamesPgDump() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("copy.sqlite").path
        let refused = try await StockroomProcess.run(
            ["backup", "--to", target, "--db-url", "postgres://stockroom@127.0.0.1:1/stockroom"], in: directory, environment: [:])
        #expect(refused.status == 64)
        #expect(refused.error.contains("on PostgreSQL use pg_dump and pg_restore"), "\(refused.error)")
        #expect(!FileManager.default.fileExists(atPath: target), "nothing written")
        let help = try await StockroomProcess.run(["backup", "--help"], in: directory, environment: [:])
        #expect(help.output.contains("pg_dump is the backup"), "\(help.output)")
    }

    /// The number of event loops is read before anything runs, as the global executor is:
    /// `--event-loops`, else `EVENT_LOOPS`, else NIO's own choice (the cores this process may use).
    /// The real binary is started each way, says at startup how many loops its group runs, and
    /// answers a request.
    @Test(.timeLimit(.minutes(10)), arguments: [
        (nil as String?, [] as [String], System.coreCount),
        ("1", [], 1),
        ("3", [], 3),
        ("3", ["--event-loops", "1"], 1),
        (nil, ["--event-loops=5"], 5),
    ])
    func theEventLoopsAreCountedAtStartup(variable: String?, flags: [String], expected: Int) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await StockroomProcess.serve(
            databasePath: databasePath, in: directory, extra: flags,
            shellPrefix: "unset NIO_SINGLETON_GROUP_LOOP_COUNT; " + (variable.map { "export EVENT_LOOPS=\($0)" } ?? "unset EVENT_LOOPS"))
        defer { kill(server.process.processIdentifier, SIGKILL) }
        let log = try await server.waitForOutput(containing: "global executor")
        let line = try #require(log.split(separator: "\n").first { $0.contains("global executor") })
        #expect(line.contains("event_loops=\(expected) "), "\(line)")
        let health = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/health"), timeout: .seconds(30))
        #expect(health.status.code == 200)
        kill(server.process.processIdentifier, SIGTERM)
        #expect(await server.waitForExit() == 0)
    }

    @Test func aBadEventLoopCountIsAUsageError() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        for value in ["0", "two", "1025", "-1", ""] {
            let run = try await StockroomProcess.run(
                ["migrate", "--db-path", databasePath], in: directory, environment: ["EVENT_LOOPS": value])
            #expect(run.status == 64)
            #expect(run.error.contains(#"invalid setting event loops (environment variable EVENT_LOOPS): "\#(value)"; expected a whole number from 1 to 1024"#))
        }
        let byFlag = try await StockroomProcess.run(["serve", "--event-loops", "2.5", "--db-path", databasePath], in: directory, environment: [:])
        #expect(byFlag.status == 64)
        #expect(byFlag.error.contains(#"(flag --event-loops): "2.5""#))
        #expect(!FileManager.default.fileExists(atPath: databasePath), "nothing ran")
    }

    @Test func anAcknowledgedWriteSurvivesKillDashNine() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = try #require(
            try await StockroomProcess.run(["token", "create", "--user", "erin", "--role", "editor", "--db-path", databasePath], in: directory)
                .output.split(separator: "\n").last.map(String.init))
        let first = try await StockroomProcess.serve(databasePath: databasePath, in: directory)
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(first.port)/v1/items")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: draftJSON(name: "Durable")))
        let created = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect(created.status == .created)
        let item = try JSONCoding.decoder().decode(Item.self, from: Data(buffer: try await created.body.collect(upTo: 1 << 20)))

        kill(first.process.processIdentifier, SIGKILL)
        #expect(await first.waitForExit() == SIGKILL)

        let second = try await StockroomProcess.serve(databasePath: databasePath, in: directory)
        var get = HTTPClientRequest(url: "http://127.0.0.1:\(second.port)/v1/items/\(item.id)")
        get.headers.add(name: "Authorization", value: "Bearer \(token)")
        let fetched = try await HTTPClient.shared.execute(get, timeout: .seconds(30))
        #expect(fetched.status == .ok)
        #expect(try JSONCoding.decoder().decode(Item.self, from: Data(buffer: try await fetched.body.collect(upTo: 1 << 20))) == item)

        // SIGTERM: the server stops accepting, finishes, checkpoints the WAL into the file and exits cleanly.
        kill(second.process.processIdentifier, SIGTERM)
        #expect(await second.waitForExit() == 0)
        let wal = (try? FileManager.default.attributesOfItem(atPath: databasePath + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "the WAL was checkpointed and truncated on shutdown")
    }

    /// SIGTERM while another process holds the database's write lock, with writes waiting for it:
    /// the server exits 0 (it used to outlast ServiceLifecycle's cancellation bound and stop with a
    /// fatal error, exit 132), nothing of the waiting writes is applied, and what was acknowledged
    /// before stays.
    @Test(.timeLimit(.minutes(10)))
    func sigtermWhileAnotherProcessHoldsTheWriteLockExitsCleanly() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = try #require(
            try await StockroomProcess.run(["token", "create", "--user", "erin", "--role", "editor", "--db-path", databasePath], in: directory)
                .output.split(separator: "\n").last.map(String.init))
        let server = try await StockroomProcess.serve(databasePath: databasePath, in: directory)
        defer { kill(server.process.processIdentifier, SIGKILL) }
        let live = LiveServer(port: server.port)
        let before = try await live.request(.POST, "/v1/items", token: token, json: draftJSON(name: "Before the lock"))
        #expect(before.status == 201)

        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: databasePath, configuration: configuration)
        try other.inDatabase { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        let waiting = (0..<3).map { index in
            Task { try? await live.request(.POST, "/v1/items", token: token, json: draftJSON(name: "Waiting \(index)")) }
        }
        // Time for the writes to reach the server and wait for the lock (the presence leases given
        // up at shutdown wait for it too, so the shutdown meets the lock either way).
        try await Task.sleep(for: .milliseconds(500))
        kill(server.process.processIdentifier, SIGTERM)
        #expect(await server.waitForExit() == 0)
        for task in waiting { _ = await task.value }
        try other.inDatabase { db in try db.execute(sql: "ROLLBACK") }

        let names = try await other.read { db in try String.fetchAll(db, sql: "SELECT name FROM items") }
        #expect(names == ["Before the lock"])
    }

    /// The real binary's request log: one line per request in swift-log's form, written by the
    /// log's own thread (`RequestLine`), with the request id, method, path without the query,
    /// status and duration; and `/metrics` shows its counters and gauges from 0, before their first
    /// event (a series that appears only once something went wrong cannot be alerted on by rate).
    @Test(.timeLimit(.minutes(10)))
    func eachRequestIsLoggedOnceWithItsFields() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await StockroomProcess.serve(databasePath: databasePath, in: directory)
        defer { kill(server.process.processIdentifier, SIGKILL) }
        let live = LiveServer(port: server.port)
        let metrics = String(decoding: try await live.request(.GET, "/metrics?secret=1", token: nil).body, as: UTF8.self)
        for series in [
            "stockroom_log_lines_dropped_total", #"stockroom_limit_refusals_total{limit="subscribers"}"#,
            #"stockroom_limit_refusals_total{limit="subscribersPerToken"}"#, #"stockroom_limit_refusals_total{limit="connections"}"#,
            #"stockroom_feed_stalled_disconnects_total{transport="sse"}"#, #"stockroom_feed_stalled_disconnects_total{transport="ws"}"#,
            #"stockroom_feed_changes_sent_total{transport="longpoll"}"#, #"stockroom_feed_subscribers{transport="ws"}"#,
            "stockroom_snapshot_streams",
        ] {
            let lines = metrics.split(separator: "\n")
            #expect(lines.contains { $0 == "\(series) 0" || $0 == "\(series) 0.0" }, "\(series) is not at 0 in /metrics")
        }
        let log = try await server.waitForOutput(containing: "http.path=/metrics")
        let line = try #require(log.split(separator: "\n").first { $0.contains("http.path=/metrics") })
        let fields = line.split(separator: " ")
        #expect(fields.count == 10, "timestamp, level, label, five fields, source, message: \(line)")
        #expect(fields[1] == "info" && fields[2] == "stockroom:" && fields[8] == "[StockroomServer]" && fields[9] == "request")
        #expect(fields[3].hasPrefix("duration_ms=") && fields[4].hasPrefix("hb.request.id="))
        #expect(fields[5] == "http.method=GET" && fields[6] == "http.path=/metrics" && fields[7] == "http.status=200")
        #expect(!log.contains("secret"), "never the query")
    }

    /// SIGTERM ends every feed stream cleanly (the SSE body finishes, the WebSocket closes with 1001) and the
    /// process exits 0, instead of waiting on subscribers that would otherwise stay forever.
    @Test(.timeLimit(.minutes(10)))
    func sigtermEndsOpenFeedStreams() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = try #require(
            try await StockroomProcess.run(["token", "create", "--user", "erin", "--role", "viewer", "--db-path", databasePath], in: directory)
                .output.split(separator: "\n").last.map(String.init))
        let server = try await StockroomProcess.serve(databasePath: databasePath, in: directory)
        let live = LiveServer(port: server.port)
        let sse = try await SSEReader(server: live, token: token, query: "since=now")
        #expect(sse.status == 200)
        let (connected, connection) = AsyncStream.makeStream(of: Void.self)
        let webSocket = Task {
            try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(server.port)/v1/changes/ws?since=now&access_token=\(token)", logger: Logger(label: "test")
            ) { inbound, _, _ in
                connection.yield()
                for try await _ in inbound.messages(maxSize: 1 << 20) {}
            }
        }
        for await _ in connected { break }
        kill(server.process.processIdentifier, SIGTERM)
        #expect(try await sse.next() == nil, "the SSE stream ended")
        let close = try await webSocket.value
        #expect(close?.closeCode == .goingAway, "the server closed the WebSocket with 1001")
        #expect(await server.waitForExit() == 0)
    }

    /// A setting of the wrong type stops every subcommand with exit status 64 and one line naming
    /// the setting, the value and what is expected, instead of running on the default.
    @Test(arguments: [
        (["serve"], ["HTTP_PORT": "abc"], ["http.port", "HTTP_PORT", "abc"]),
        (["serve"], ["DEMO": "banana"], ["demo", "DEMO", "banana"]),
        (["migrate"], ["DB_SYNCHRONOUS": "sometimes"], ["db.synchronous", "sometimes", "full, normal"]),
        (["serve", "--config", "missing.json"], [:], ["missing.json"]),
    ])
    func aBadSettingStopsStartupWithStatus64(arguments: [String], environment: [String: String], mentions: [String]) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await StockroomProcess.run(arguments + ["--db-path", databasePath], in: directory, environment: environment)
        #expect(result.status == 64)
        let line = result.error.split(separator: "\n").first.map(String.init) ?? ""
        for word in mentions { #expect(line.contains(word), "\(line)") }
        #expect(!FileManager.default.fileExists(atPath: databasePath), "nothing was created")
    }

    /// A port in use stops `serve` with a line saying so and what to do, and `--demo` makes no
    /// token for a start that fails; a database that cannot be created is said so too.
    @Test(.timeLimit(.minutes(10)))
    func startupErrorsSayWhatFailedAndWhatToDo() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try await StockroomProcess.serve(databasePath: databasePath, in: directory)
        let otherPath = directory.appendingPathComponent("other.sqlite").path
        let second = try await StockroomProcess.run(
            ["serve", "--demo", "--db-path", otherPath, "--http-port", "\(first.port)"], in: directory, environment: [:])
        #expect(second.status == 1)
        let line = second.error.split(separator: "\n").last.map(String.init) ?? ""
        #expect(line.contains("127.0.0.1:\(first.port)") && line.contains("already in use") && line.contains("--http-port"), "\(line)")
        #expect(!second.error.contains("errno"), "no raw library error: \(second.error)")
        #expect(!second.output.contains("sr_"), "no demo token was printed")
        // A host that is neither an address nor a name that resolves is said so, with what to do.
        let unknownHost = try await StockroomProcess.run(
            ["serve", "--db-path", otherPath, "--http-port", "0"], in: directory, environment: ["HTTP_HOST": "-5x"])
        #expect(unknownHost.status == 1)
        let hostLine = unknownHost.error.split(separator: "\n").last.map(String.init) ?? ""
        #expect(hostLine.contains("cannot listen on -5x") && hostLine.contains("--http-host or HTTP_HOST"), "\(hostLine)")
        #expect(!hostLine.contains("SocketAddressError"), "no raw library error: \(hostLine)")
        // A second server on the first one's file, under another name of it (a symbolic link), is refused.
        let link = directory.appendingPathComponent("link.sqlite").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: databasePath)
        let third = try await StockroomProcess.run(["serve", "--db-path", link, "--http-port", "0"], in: directory, environment: [:])
        #expect(third.status == 1)
        let refusal = third.error.split(separator: "\n").last.map(String.init) ?? ""
        #expect(refusal.contains("another server has this database open") && refusal.contains("PostgreSQL"), "\(refusal)")
        kill(first.process.processIdentifier, SIGTERM)
        #expect(await first.waitForExit() == 0)
        let tokens = try await StockroomProcess.run(["token", "list", "--db-path", otherPath], in: directory)
        #expect(!tokens.output.contains("\tdemo\t"), "no demo token was created: \(tokens.output)")

        let file = directory.appendingPathComponent("a-file")
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data()))
        let path = file.appendingPathComponent("stockroom.sqlite").path
        for command in [["serve"], ["migrate"], ["token", "create", "--user", "ops", "--role", "viewer"]] {
            let result = try await StockroomProcess.run(command + ["--db-path", path], in: directory, environment: [:])
            #expect(result.status == 1)
            let line = result.error.split(separator: "\n").last.map(String.init) ?? ""
            #expect(line.hasPrefix("stockroom: cannot open the database \(path)") && line.contains("--db-path"), "\(line)")
        }
        // A config file that gives a key twice is refused (the reader keeps one value, its writer may
        // have meant the other), as is one that is not JSON, in one line that says so.
        let config = directory.appendingPathComponent("config.json")
        for (text, message) in [
            (#"{"db": {"path": "a.sqlite", "path": "b.sqlite"}}"#, "gives db.path twice; keep one"),
            (#"{"http": {"port": 1"#, "Unexpected end of file"),
        ] {
            try Data(text.utf8).write(to: config)
            let result = try await StockroomProcess.run(["token", "list", "--config", config.path], in: directory, environment: [:])
            #expect(result.status == 64 && result.error.contains(message) && !result.error.contains("NSCocoaErrorDomain"), "\(result.error)")
        }
        // A backup into a folder that is not there says which folder.
        let intoNowhere = try await StockroomProcess.run(
            ["backup", "--to", directory.appendingPathComponent("nowhere/b.sqlite").path, "--db-path", otherPath], in: directory, environment: [:])
        #expect(intoNowhere.status == 1 && intoNowhere.error.contains("the folder \(directory.appendingPathComponent("nowhere").path) does not exist"), "\(intoNowhere.error)")
        // A folder named as the database is refused before anything is changed in it or beside it.
        let folder = directory.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        for command in [["serve", "--http-port", "0"], ["token", "list"], ["token", "create", "--user", "ops", "--role", "viewer"], ["migrate"]] {
            let result = try await StockroomProcess.run(command + ["--db-path", folder.path], in: directory, environment: [:])
            #expect(result.status == 1 && result.error.contains("\(folder.path) is a folder, not a database file"), "\(command): \(result.error)")
        }
        #expect(try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int == 0o755)
        #expect(!FileManager.default.fileExists(atPath: folder.path + ".lock") && !FileManager.default.fileExists(atPath: folder.path + ".server.lock"))
        // The commands that read what a database holds refuse one that is not there, and create nothing.
        let missing = directory.appendingPathComponent("typo/stockroom.sqlite").path
        for command in [["token", "list"], ["token", "revoke", "tok_x"], ["backup", "--to", directory.appendingPathComponent("b.sqlite").path]] {
            let result = try await StockroomProcess.run(command + ["--db-path", missing], in: directory, environment: [:])
            #expect(result.status == 1)
            let line = result.error.split(separator: "\n").last.map(String.init) ?? ""
            #expect(line == "stockroom: no database at \(missing): name the file with --db-path, DB_PATH or db.path "
                + "(the default, ./data/stockroom.sqlite, is relative to the working directory)", "\(line)")
            #expect(!FileManager.default.fileExists(atPath: missing) && !FileManager.default.fileExists(atPath: directory.appendingPathComponent("b.sqlite").path))
        }
    }

    /// `--demo` prints an editor token on the first start only; later starts make none.
    @Test(.timeLimit(.minutes(10)))
    func theDemoTokenIsCreatedOnce() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        for expected in ["export TOKEN=sr_", "was printed when it was created"] {
            let server = try await StockroomProcess.serve(databasePath: databasePath, in: directory, extra: ["--demo"])
            _ = try await server.waitForOutput(containing: expected)
            kill(server.process.processIdentifier, SIGTERM)
            #expect(await server.waitForExit() == 0)
        }
        let tokens = try await StockroomProcess.run(["token", "list", "--db-path", databasePath], in: directory).output
        #expect(tokens.split(separator: "\n").filter { $0.contains("\tdemo\teditor\t") }.count == 1, "\(tokens)")
    }

    /// SIGTERM answers an open long-poll at once with its (empty) batch and cursor, ends SSE
    /// streams, drops connections that are idle, half-sent or stuck in a body, and exits 0,
    /// instead of waiting for the poll's 60 s.
    @Test(.timeLimit(.minutes(10)))
    func sigtermAnswersLongPollsAtOnceAndExitsPromptly() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = try #require(
            try await StockroomProcess.run(["token", "create", "--user", "erin", "--role", "editor", "--db-path", databasePath], in: directory)
                .output.split(separator: "\n").last.map(String.init))
        let server = try await StockroomProcess.serve(databasePath: databasePath, in: directory)
        let live = LiveServer(port: server.port)
        let poll = Task { try await live.request(.GET, "/v1/changes?since=now&wait=60", token: token) }
        let sse = try await SSEReader(server: live, token: token, query: "since=now")
        let silent = try RawSocket(port: server.port, path: "", raw: "")
        let halfHeaders = try RawSocket(port: server.port, path: "", raw: "GET /health HTTP/1.1\r\nHost: x\r\n")
        let stuckBody = try RawSocket(
            port: server.port, path: "",
            raw: "POST /v1/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"na")
        // Wait until the server holds the poll and the stream.
        try await eventually("the server holds the poll and the stream", interval: .milliseconds(50)) {
            let metrics = String(decoding: try await live.request(.GET, "/metrics", token: nil).body, as: UTF8.self)
            return metrics.contains(#"stockroom_feed_subscribers{transport="longpoll"} 1"#)
                && metrics.contains(#"stockroom_feed_subscribers{transport="sse"} 1"#)
        }

        let signalled = ContinuousClock.now
        kill(server.process.processIdentifier, SIGTERM)
        let answered = try await poll.value
        #expect(answered.status == 200)
        let batch = try JSONCoding.decoder().decode(FeedBatch.self, from: answered.body)
        #expect(batch.changes.isEmpty && batch.cursor.hasPrefix("c1.") && !batch.hasMore)
        #expect(try await sse.next() == nil, "the SSE stream ended")
        #expect(await server.waitForExit() == 0)
        // Far above the 3 s bound on what clients hold open, far below the poll's 60 s.
        #expect(ContinuousClock.now - signalled < .seconds(20))
        for socket in [silent, halfHeaders, stuckBody] { _ = try? socket.readUntilClosed() }
    }

    /// With a low open-file limit and more idle clients than it allows, the server raises its soft
    /// limit to the hard one (and says so), caps connections below it, answers the ones over the
    /// cap with 503, and serves again once they go, instead of going deaf in an EMFILE loop.
    @Test(.timeLimit(.minutes(10)))
    func moreIdleClientsThanFileDescriptorsLeaveTheServerAnswering() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        // The shell first closes what it inherited from this test process (whose open sockets and
        // files, many while other tests run, would count against the server's 300), so the server
        // starts with its own descriptors only, as from a service manager.
        let closeInherited = #"for fd in /proc/$$/fd/*; do n=${fd##*/}; if [ "$n" -gt 2 ]; then eval "exec $n>&-" 2>/dev/null; fi; done"#
        let server = try await StockroomProcess.serve(
            databasePath: databasePath, in: directory, shellPrefix: closeInherited + "; ulimit -Sn 150 && ulimit -Hn 300")
        defer { kill(server.process.processIdentifier, SIGKILL) }
        #expect(server.logSoFar.contains("hard=300") && server.logSoFar.contains("now=300") && server.logSoFar.contains("soft=150"))
        #expect(server.logSoFar.contains("maxConnections=172"))
        let idle = try (0..<400).map { _ in try RawSocket(port: server.port, path: "", raw: "") }
        let answer = try await ReliabilityTests.response(try RawSocket(port: server.port, path: "/health"))
        #expect(
            answer.hasPrefix("HTTP/1.1 503") || answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(80)); \(server.stateForDiagnosis())")
        // It stopped accepting with descriptors to spare: at its limit more fails than an accept
        // (libdispatch's pool monitor stops the process when it cannot open /proc/<tid>/stat).
        #if os(Linux)
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.process.processIdentifier)/fd").count
        #expect(open <= 300 - 32, "\(open) descriptors open of 300")
        #endif
        for socket in idle { shutdown(socket.descriptor, Int32(SHUT_RDWR)) }
        do {
            try await eventually("/health answers 200 once the idle clients are gone", interval: .milliseconds(100)) {
                try await ReliabilityTests.response(try RawSocket(port: server.port, path: "/health")).hasPrefix("HTTP/1.1 200")
            }
        } catch {
            Issue.record("\(error); \(server.stateForDiagnosis())")
            throw error
        }
        kill(server.process.processIdentifier, SIGTERM)
        #expect(await server.waitForExit() == 0)
    }

    /// `stockroom items export` against a running server: the file is the export route's body,
    /// `--filter` narrows it, and a bad filter or no token is a clear failure.
    @Test(.timeLimit(.minutes(10)))
    func itemsExportWritesTheServersCSV() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = try #require(
            try await StockroomProcess.run(["token", "create", "--user", "erin", "--role", "viewer", "--db-path", databasePath], in: directory)
                .output.split(separator: "\n").last.map(String.init))
        let server = try await StockroomProcess.serve(databasePath: databasePath, in: directory, extra: ["--demo"])
        defer { kill(server.process.processIdentifier, SIGKILL) }
        let live = LiveServer(port: server.port)
        let url = "http://127.0.0.1:\(server.port)"
        let file = directory.appendingPathComponent("items.csv").path
        let exported = try await StockroomProcess.run(
            ["items", "export", "--server", url, "-o", file], in: directory, environment: ["STOCKROOM_TOKEN": token])
        #expect(exported.status == 0, "\(exported.error)")
        let expected = try await live.request(.GET, "/v1/items/export", token: token).body
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == expected)
        #expect(exported.error.contains("exported 4 items to \(file) at feed cursor c1."), "\(exported.error)")

        let filtered = try await StockroomProcess.run(
            ["items", "export", "--server", url, "--filter", "quantity >= 100"], in: directory, environment: ["STOCKROOM_TOKEN": token])
        #expect(filtered.status == 0)
        #expect(filtered.output.split(separator: "\r\n").map { String($0.prefix(5)) } == ["name,", "Keybo", "Mouse"])

        let bad = try await StockroomProcess.run(
            ["items", "export", "--server", url, "--filter", "quantity <"], in: directory, environment: ["STOCKROOM_TOKEN": token])
        #expect(bad.status != 0 && bad.error.contains("422") && bad.error.contains("at character 11"), "\(bad.error)")
        let anonymous = try await StockroomProcess.run(["items", "export", "--server", url], in: directory, environment: ["STOCKROOM_TOKEN": ""])
        #expect(anonymous.status != 0 && anonymous.error.contains("STOCKROOM_TOKEN"), "\(anonymous.error)")
    }

    /// `stockroom items import` against a running server: the export of its demo items, edited,
    /// imports back (plain progress lines when not on a terminal, then the summary); a file with a
    /// rejected row imports nothing under abort (exit 2) and the rest under skip; a dry run changes
    /// nothing.
    @Test(.timeLimit(.minutes(10)))
    func itemsImportSendsAFileAndSaysWhatItDid() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = try #require(
            try await StockroomProcess.run(["token", "create", "--user", "erin", "--role", "editor", "--db-path", databasePath], in: directory)
                .output.split(separator: "\n").last.map(String.init))
        let server = try await StockroomProcess.serve(databasePath: databasePath, in: directory, extra: ["--demo"])
        defer { kill(server.process.processIdentifier, SIGKILL) }
        let live = LiveServer(port: server.port)
        let url = "http://127.0.0.1:\(server.port)"
        let environment = ["STOCKROOM_TOKEN": token]
        let export = String(decoding: try await live.request(.GET, "/v1/items/export", token: token).body, as: UTF8.self)
        // The first item renamed, a new one added.
        var lines = export.split(separator: "\r\n").map(String.init)
        lines[1] = "Renamed" + lines[1].drop { $0 != "," }
        lines.append("Lamp,inStock,3,,,,,,,,,")
        let file = directory.appendingPathComponent("items.csv").path
        try (lines.joined(separator: "\r\n") + "\r\n").write(toFile: file, atomically: true, encoding: .utf8)
        let dry = try await StockroomProcess.run(["items", "import", file, "--dry-run", "--server", url], in: directory, environment: environment)
        #expect(dry.status == 0, "\(dry.error)")
        #expect(dry.output.contains("dry run, nothing changed: 1 inserted, 1 updated, 3 unchanged, 0 rejected"), "\(dry.output)")
        #expect(dry.error.contains("sent 5 rows, 100% of the file"), "\(dry.error)")
        let imported = try await StockroomProcess.run(["items", "import", file, "--server", url], in: directory, environment: environment)
        #expect(imported.status == 0 && imported.output.contains("imported: 1 inserted, 1 updated, 3 unchanged"), "\(imported.output)")
        let names = String(decoding: try await live.request(.GET, "/v1/items/export", token: token).body, as: UTF8.self)
        #expect(names.contains("Renamed,") && names.contains("Lamp,"))

        let bad = directory.appendingPathComponent("bad.csv").path
        try "name,quantity\nDesk,1\nChair,many\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let aborted = try await StockroomProcess.run(["items", "import", bad, "--server", url], in: directory, environment: environment)
        #expect(aborted.status == 2, "\(aborted.output) \(aborted.error)")
        #expect(aborted.output.contains("nothing imported: 1 rows rejected") && aborted.output.contains("line 3, column quantity"), "\(aborted.output)")
        let skipped = try await StockroomProcess.run(["items", "import", bad, "--on-error", "skip", "--server", url], in: directory, environment: environment)
        #expect(skipped.status == 0 && skipped.output.contains("imported: 1 inserted, 0 updated, 0 unchanged, 1 rejected"), "\(skipped.output)")
        let refused = try await StockroomProcess.run(["items", "import", file, "--on-error", "maybe", "--server", url], in: directory, environment: environment)
        #expect(refused.status != 0 && refused.error.contains("--on-error is abort or skip"), "\(refused.error)")
        // A server that is not there: said at once (port 1 refuses), exit 1, for both commands.
        for command in [["items", "import", file], ["items", "export"]] {
            let nobody = try await StockroomProcess.run(command + ["--server", "http://127.0.0.1:1"], in: directory, environment: environment)
            #expect(nobody.status == 1 && nobody.error.contains("127.0.0.1:1") && nobody.error.contains("refused"), "\(nobody.error)")
        }
    }

    /// `backup` copies the live database while the server writes and verifies it; `restore`
    /// refuses a missing, corrupt or newer-schema file without touching the database, and otherwise
    /// replaces it under a new epoch: the backed-up items are back and an older cursor gets 410.
    @Test(.timeLimit(.minutes(10)))
    func backupWhileServingAndRestoreUnderANewEpoch() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let token = try #require(
            try await StockroomProcess.run(["token", "create", "--user", "erin", "--role", "editor", "--db-path", databasePath], in: directory)
                .output.split(separator: "\n").last.map(String.init))
        let first = try await StockroomProcess.serve(databasePath: databasePath, in: directory)
        let live = LiveServer(port: first.port)
        for name in ["One", "Two", "Three"] {
            #expect(try await live.request(.POST, "/v1/items", token: token, json: draftJSON(name: name)).status == 201)
        }
        let oldCursor = try await live.drain(since: nil, token: token).cursor
        let writer = Task {
            var written = 0
            while !Task.isCancelled, written < 200 {
                _ = try await live.request(.POST, "/v1/items", token: token, json: draftJSON(name: "During \(written)"))
                written += 1
            }
        }
        let backupPath = directory.appendingPathComponent("backup.sqlite").path
        let backup = try await StockroomProcess.run(["backup", "--to", backupPath, "--db-path", databasePath], in: directory, environment: [:])
        writer.cancel()
        _ = try? await writer.value
        #expect(backup.status == 0, "\(backup.error)")
        #expect(backup.output.contains("integrity ok"))
        let mode = try FileManager.default.attributesOfItem(atPath: backupPath)[.posixPermissions] as? Int
        #expect(mode == 0o600, "a backup is its owner's only, as the live database is")
        #expect(try await live.request(.POST, "/v1/items", token: token, json: draftJSON(name: "After the backup")).status == 201)

        // A restore under the running server is refused: it would serve the replaced file on, and
        // lose what it acknowledged after.
        let underServer = try await StockroomProcess.run(["restore", "--from", backupPath, "--db-path", databasePath], in: directory, environment: [:])
        #expect(underServer.status == 1)
        #expect(underServer.error.contains("in use") && underServer.error.contains("nothing replaced"), "\(underServer.error)")
        // So is one that names the file by a symbolic link, and one that names its folder, which
        // keeps everything in it.
        let link = directory.appendingPathComponent("link.sqlite").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: databasePath)
        let throughLink = try await StockroomProcess.run(["restore", "--from", backupPath, "--db-path", link], in: directory, environment: [:])
        #expect(throughLink.status == 1 && throughLink.error.contains("in use"), "\(throughLink.error)")
        let folder = URL(fileURLWithPath: databasePath).deletingLastPathComponent().path
        let contents = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        let ofFolder = try await StockroomProcess.run(["restore", "--from", backupPath, "--db-path", folder], in: directory, environment: [:])
        #expect(ofFolder.status == 1 && ofFolder.error.contains("is a folder, not a database file"), "\(ofFolder.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == contents)
        #expect(try await live.request(.POST, "/v1/items", token: token, json: draftJSON(name: "After the refused restore")).status == 201)
        let served = try await live.drain(since: nil, token: token).changes.compactMap(\.item?.name)
        #expect(served.contains("After the backup") && served.contains("After the refused restore"))
        kill(first.process.processIdentifier, SIGTERM)
        #expect(await first.waitForExit() == 0)

        // Refusals replace nothing.
        let corrupt = directory.appendingPathComponent("corrupt.sqlite").path
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: corrupt))
        let newer = directory.appendingPathComponent("newer.sqlite").path
        try FileManager.default.copyItem(atPath: backupPath, toPath: newer)
        try await DatabaseQueue(path: newer).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('9999_from_the_future')")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: databasePath))
        for (file, reason) in [("missing.sqlite", "does not exist"), (corrupt, "not a SQLite database"), (newer, "newer schema")] {
            let refused = try await StockroomProcess.run(["restore", "--from", file, "--db-path", databasePath], in: directory, environment: [:])
            #expect(refused.status == 1)
            #expect(refused.error.contains(reason) && refused.error.contains("nothing replaced"), "\(refused.error)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: databasePath)) == before)

        let restore = try await StockroomProcess.run(["restore", "--from", backupPath, "--db-path", databasePath], in: directory, environment: [:])
        #expect(restore.status == 0, "\(restore.error)")
        #expect(restore.output.contains("new epoch"))
        // Read from a copy: nothing written beside the backup, which may sit on read-only media.
        for suffix in ["-wal", "-shm"] {
            #expect(!FileManager.default.fileExists(atPath: backupPath + suffix), "\(suffix) beside the backup")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".restore") }
        #expect(leftovers.isEmpty, "\(leftovers)")

        // A server does not start on a file that a restore is replacing (here, one holding its lock).
        let restoring = try DatabaseFileLock(database: databasePath, mode: .exclusive)
        let blocked = try await StockroomProcess.run(["serve", "--db-path", databasePath, "--http-port", "0"], in: directory, environment: [:])
        // Nor a copy into PostgreSQL from it (refused before it connects anywhere).
        let copy = try await StockroomProcess.run(
            ["migrate", "--from-sqlite", databasePath, "--db-url", "postgres://nobody@127.0.0.1:1/none"], in: directory, environment: [:])
        restoring.release()
        #expect(blocked.status != 0)
        #expect(blocked.error.contains("being replaced by `stockroom restore`"), "\(blocked.error)")
        #expect(copy.status != 0)
        #expect(copy.error.contains("being replaced by `stockroom restore`"), "\(copy.error)")

        let second = try await StockroomProcess.serve(databasePath: databasePath, in: directory)
        let restored = LiveServer(port: second.port)
        let feed = try await restored.request(.GET, "/v1/changes?since=\(oldCursor)", token: token)
        #expect(feed.status == 410)
        let items = try await restored.drain(since: nil, token: token).changes.compactMap(\.item?.name)
        #expect(Array(items.prefix(3)) == ["One", "Two", "Three"])
        #expect(!items.contains("After the backup"))
        kill(second.process.processIdentifier, SIGTERM)
        #expect(await second.waitForExit() == 0)
    }
}
