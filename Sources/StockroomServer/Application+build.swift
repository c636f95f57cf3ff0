import Configuration
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import StockroomStorage

/// Builds the whole application from configuration (the tests start servers this way): reads the
/// settings once and builds as `buildApplication(settings:)`, which the `serve` command calls.
/// `onServerRunning` runs once the server listens, with its storage and port.
public func buildApplication(
    reader: ConfigReader, onServerRunning: @escaping @Sendable (any Storage, Int) async -> Void = { _, _ in }
) async throws -> some ApplicationProtocol {
    try await buildApplication(settings: try Settings(reader: reader), onServerRunning: onServerRunning)
}

/// Builds the whole application from settings read once (the `serve` command reads them first, to
/// stop with exit status 64 on a bad one): opens the storage and, before the server listens,
/// seeds the demo items when asked.
public func buildApplication(
    settings: Settings, onServerRunning: @escaping @Sendable (any Storage, Int) async -> Void = { _, _ in }
) async throws -> some ApplicationProtocol {
    var logger = Logger(label: "stockroom")
    logger.logLevel = settings.logLevel
    let writes = WritesInFlight()
    let (database, services) = try await StorageOpening.open(settings, logger: logger, writesInFlight: writes, serving: true)
    if let url = settings.databaseURL {
        logger.info("database", metadata: ["url": "\(url)", "maxConnections": "\(settings.databaseMaxConnections)"])
    } else {
        logger.info("database", metadata: [
            "path": "\(settings.databasePath)", "synchronous": "\(settings.synchronous.rawValue.lowercased())",
        ])
    }
    return buildApplication(
        settings: settings, database: database, storageServices: services, writes: writes, logger: logger,
        // Once the storage's services run (PostgreSQL's pool), before the server listens.
        beforeServerStarts: { [logger] in
            if settings.demo, try await database.seedDemoItems() { logger.info("seeded the demo items") }
        },
        onServerRunning: { channel in await onServerRunning(database, channel.localAddress?.port ?? settings.port) })
}

/// Builds the application around an open storage. `storageServices` (PostgreSQL's pool and
/// listener) run first and stop last, after the server has drained its requests.
public func buildApplication(
    settings: Settings, database: any Storage, storageServices: [any Service] = [], writes: WritesInFlight = WritesInFlight(),
    logger: Logger, beforeServerStarts: (@Sendable () async throws -> Void)? = nil,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
) -> some ApplicationProtocol {
    StockroomMetrics.bootstrap()
    LogOutput.registerMetrics()
    FeedController.registerMetrics()
    if MemoryTrimmer.takeOverTrimming(environment: ProcessInfo.processInfo.environment) {
        logger.info("allocator", metadata: ["trimThreshold": "\(MemoryTrimmer.trimThreshold)", "mmapThreshold": "\(MemoryTrimmer.mmapThreshold)"])
    } else {
        logger.info("allocator", metadata: ["thresholds": "left to the allocator and the environment"])
    }
    var connections = settings.connections
    let fileLimit = FileDescriptorLimit.raise(logger: logger)
    connections.resolve(fileLimit: fileLimit)
    // Past the cap connections are answered 503; this ceiling, just under the open-file limit,
    // stops accepting altogether (new ones wait in the listen backlog), so accept never meets
    // EMFILE, which NIO retries in a busy loop.
    let openDescriptors = FileDescriptorLimit.openNow() ?? 64
    // PostgreSQL's pool and its listener connect once the services run.
    let pooled = settings.databaseURL == nil ? 0 : settings.databaseMaxConnections + 1
    let acceptCeiling = FileDescriptorLimit.acceptCeiling(limit: fileLimit, open: openDescriptors, pooled: pooled)
    if connections.maxConnections > acceptCeiling {
        logger.warning("http.maxConnections is above what the open-file limit allows; lowered", metadata: ["to": "\(acceptCeiling)"])
        connections.maxConnections = acceptCeiling
    }
    logger.info("connection cap", metadata: [
        "maxConnections": "\(connections.maxConnections)", "acceptCeiling": "\(acceptCeiling)", "openDescriptors": "\(openDescriptors)",
    ])
    let streams = FeedStreams(settings: settings.feed)
    let presence = PresenceTracker()
    let (router, fastRoutes) = buildRoutes(database: database, settings: settings, streams: streams, writes: writes, presence: presence)
    let revocationWatcher: [any Service] =
        database.watchesTokenRevocations ? [] : [TokenRevocationWatcher(database: database, interval: settings.revocationCheck, logger: logger)]
    var app = Application(
        responder: RequestTaskResponder(FastRoutesResponder(fast: fastRoutes, router: router.buildResponder())),
        server: .http1UpgradingToWebSocket(
            router: router, webSocketPaths: [FeedController.webSocketPath], connections: connections, streams: streams, logger: logger),
        configuration: ApplicationConfiguration(
            address: .hostname(settings.host, port: settings.port), serverName: "stockroom",
            availableConnectionsDelegate: MaximumAvailableConnections(acceptCeiling, logger: logger)),
        services: storageServices + [
            DatabaseMaintenanceService(
                database: database, idempotencyRetention: .seconds(settings.idempotencyRetentionHours * 3600),
                feed: settings.feed, logger: logger),
            PresenceService(database: database, tracker: presence, retentionDays: settings.limits.deviceRetentionDays, logger: logger),
            MemoryTrimmer(),
            streams,
        ] + revocationWatcher,
        onServerRunning: onServerRunning,
        logger: logger
    )
    if let beforeServerStarts { app.beforeServerStarts(perform: beforeServerStarts) }
    return app
}

/// The router with every route and middleware of the contract; `streams` must run as a service
/// (it keeps the feed streams' heartbeats and write timeouts).
func buildRouter(
    database: any Storage, settings: Settings, streams: FeedStreams, writes: WritesInFlight = WritesInFlight(),
    presence: PresenceTracker = PresenceTracker()
) -> Router<AppRequestContext> {
    buildRoutes(database: database, settings: settings, streams: streams, writes: writes, presence: presence).router
}

/// `buildRouter`, with the routes of `/v1` that answer without the router's trie (`FastRoutes`).
func buildRoutes(
    database: any Storage, settings: Settings, streams: FeedStreams, writes: WritesInFlight = WritesInFlight(),
    presence: PresenceTracker = PresenceTracker()
) -> (router: Router<AppRequestContext>, fastRoutes: FastRoutes<AppRequestContext>) {
    let router = Router(context: AppRequestContext.self)
    let recorder = RouteRecorder(router)
    let routes = RouteTable()
    router.add(middleware: RequestLogMiddleware(writes: writes))
    router.add(middleware: RequestMetricsMiddleware())
    if !settings.corsAllowedOrigins.isEmpty {
        router.add(middleware: AllowedOriginsCORSMiddleware(origins: settings.corsAllowedOrigins))
    }
    router.add(middleware: ErrorMiddleware(routes: routes))
    OperationsController(database: database, metricsAccess: settings.metricsAccess).addRoutes(to: router)
    InspectorController().addRoutes(to: router)
    let v1 = recorder.group("v1")
        .add(middleware: BearerTokenAuthenticator(database: database, queryTokenPaths: FeedController.streamingPaths))
        .group(context: CallerContext.self)
    if settings.limits.writesPerSecond > 0 {
        v1.add(middleware: WriteRateLimitMiddleware(writesPerSecond: settings.limits.writesPerSecond, burst: settings.limits.writeBurst))
    }
    ItemsController(database: database, limits: settings.limits).addRoutes(to: v1.group("items"))
    TokensController(database: database).addRoutes(to: v1.group("tokens"))
    NavigationController(database: database, presence: presence).addRoutes(to: v1)
    FeedController(
        database: database, settings: settings.feed, streams: streams, presence: presence, allowedOrigins: Set(settings.corsAllowedOrigins)
    ).addRoutes(to: v1)
    routes.record(router.routes.map { ("\($0.path)", $0.method) })
    return (router, recorder.fastRoutes())
}
