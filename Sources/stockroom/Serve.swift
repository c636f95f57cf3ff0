import ArgumentParser
import Foundation
import Configuration
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import StockroomCore
import StockroomServer
import StockroomStorage
import Synchronization

/// `stockroom serve`: run the HTTP server until SIGTERM or SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the HTTP server.")

    @Option(name: .customLong("http-host"), help: "Address to listen on (default 127.0.0.1; env HTTP_HOST).")
    var httpHost: String?

    @Option(name: .customLong("http-port"), help: "Port to listen on (default 8080; env HTTP_PORT).")
    var httpPort: Int?

    @Option(
        name: .customLong("global-executor"),
        help: "Where tasks run: eventloops (NIO's event loops, the default) or default (Swift's pool); env GLOBAL_EXECUTOR. Read before anything else runs, so not from the config file."
    )
    var globalExecutor: String?

    @Option(
        name: .customLong("event-loops"),
        help: "How many event loops serve connections, 1-1024 (default: the cores this process may use); env EVENT_LOOPS. Read before anything else runs, so not from the config file."
    )
    var eventLoops: Int?

    @Flag(help: "Seed the four demo items into an empty database and print an editor token.")
    var demo = false

    @OptionGroup var storage: StorageOptions

    func run() async throws {
        LogOutput.standardOutput.startBatching()
        defer { LogOutput.standardOutput.flush() }
        var flags: [AbsoluteConfigKey: ConfigValue] = [:]
        if let httpHost { flags["http.host"] = .init(.string(httpHost), isSecret: false) }
        if let httpPort { flags["http.port"] = .init(.int(httpPort), isSecret: false) }
        if demo { flags["demo"] = .init(.bool(true), isSecret: false) }
        let reader = try await storage.reader(flags: flags)
        let settings = try Startup.settings(reader)
        let listening = Mutex(false)
        let storage = Mutex<(any Storage)?>(nil)
        let app: any ApplicationProtocol
        do {
            app = try await buildApplication(settings: settings) { database, _ in
                listening.withLock { $0 = true }
                storage.withLock { $0 = database }
                // Only now that the server listens: a start that fails makes no token.
                if settings.demo { await Self.printDemoToken(database, settings: settings) }
            }
        } catch let error as StartupError {
            throw Startup.failure(error.description)
        }
        var logger = Logger(label: "stockroom")
        logger.logLevel = settings.logLevel
        logger.info("global executor", metadata: ["executor": "\(Entry.globalExecutor)", "event_loops": "\(Entry.eventLoopCount)"])
        // The group shuts its services down last first: the notice goes before the application's
        // requests in flight are waited for.
        var group = ServiceGroupConfiguration(
            services: [.init(service: app), .init(service: ShutdownNotice { storage.withLock { $0 }?.shutdownBegins() })], logger: logger)
        group.gracefulShutdownSignals = [.sigterm, .sigint]
        // Streams and long-polls end at once on SIGTERM, so this bound only cuts off what a client
        // holds open (a request body that never completes): the process is gone within 5 s.
        group.maximumGracefulShutdownDuration = Self.gracefulShutdownBound
        group.maximumCancellationDuration = Self.cancellationBound(busyTimeoutSeconds: settings.busyTimeoutSeconds)
        do {
            try await ServiceGroup(configuration: group).run()
        } catch where !listening.withLock({ $0 }) {
            // Only a socket's error is the address's; anything else that stopped the start (the
            // demo items' write, a storage failure) is said as itself.
            guard error is IOError || error is ChannelError || error is SocketAddressError || error is SocketAddressError.UnknownHost else {
                throw Startup.failure(StartupError.start(underlying: error).description)
            }
            throw Startup.failure(StartupError.listen(host: settings.host, port: settings.port, underlying: error).description)
        }
    }

    /// How long graceful shutdown may take before what is left is cancelled.
    static let gracefulShutdownBound: Duration = .seconds(3)

    /// How long the services may take to end once cancelled, past which ServiceLifecycle stops the
    /// process with a fatal error. A write waiting for a lock another process holds cannot be
    /// cancelled: it ends at the busy timeout (`db.busyTimeoutSeconds`) with 503. The writes queued
    /// after the signal do not wait for the lock (`ShutdownNotice`).
    static func cancellationBound(busyTimeoutSeconds: Int) -> Duration {
        .seconds(1 + busyTimeoutSeconds)
    }

    /// Creates the demo editor token the first time and prints it; later starts say where it went
    /// and how to make another.
    static func printDemoToken(_ database: any Storage, settings: Settings) async {
        let text: String
        do {
            if let token = try await database.createTokenIfNone(user: UserID(stored: "demo"), role: .editor) {
                text = "Demo editor token (user demo): \(token.secret)\n  export TOKEN=\(token.secret)\n"
            } else {
                // Both forms: `stockroom` is on the PATH of an installed server only, not of
                // someone who started this one with `swift run` in the source checkout.
                let create = "token create --user demo --role editor" + databaseArgument(settings)
                text = "The demo token (user demo) was printed when it was created; make another with\n"
                    + "  stockroom \(create)\n"
                    + "or, in the source checkout: swift run stockroom \(create)\n"
            }
        } catch {
            text = "Could not create the demo token: \(error)\n"
        }
        // Written unbuffered, after the log lines before it: the server runs on, so buffered output
        // would not show while it does.
        LogOutput.standardOutput.flush()
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// What `token create` needs to reach this server's database: nothing for the default SQLite
    /// file, `--db-path` with the file (quoted for a shell where needed) for another, and a
    /// placeholder `--db-url URL` for PostgreSQL, whose URL may hold a password.
    static func databaseArgument(_ settings: Settings) -> String {
        if settings.databaseURL != nil { return " --db-url URL" }
        let path = settings.databasePath
        if path == Settings.defaultDatabasePath { return "" }
        let plain = path.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._/+,:@%=-".unicodeScalars.contains($0)) }
        return " --db-path " + (plain ? path : "'" + path.replacingOccurrences(of: "'", with: #"'\''"#) + "'")
    }
}

/// Runs `begins` as soon as graceful shutdown begins (its service is the group's last, so the
/// first the shutdown reaches).
struct ShutdownNotice: Service {
    let begins: @Sendable () -> Void

    func run() async throws {
        // Returns at the graceful shutdown, or throws at a cancellation: either way shutdown has begun.
        try? await gracefulShutdown()
        begins()
    }
}
