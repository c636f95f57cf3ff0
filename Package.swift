// swift-tools-version:6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "stockroom",
    // The server runs on Linux and macOS 15 (its Synchronization's Mutex and Atomic); the client library
    // (StockroomClient) also on Apple's other platforms, from the releases that have Observation
    // (.ci/check-sdk-platforms.py holds what it uses of Foundation to iOS 17). A platform's floor is
    // the package's, so macOS stays at the server's 15.
    platforms: [.macOS(.v15), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .executable(name: "stockroom", targets: ["stockroom"]),
        .library(name: "StockroomClient", targets: ["StockroomClient"]),
        // For the benchmarks package (Benchmarks/), which measures the store in process.
        .library(name: "StockroomStore", targets: ["StockroomStore", "StockroomStorage", "StockroomWire", "StockroomCore"]),
        .executable(name: "stockroom-handoff", targets: ["StockroomHandoff"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        // WSCore (the WebSocket handler hummingbird-websocket runs) and NIO's HTTP codecs, for switching any
        // request of a connection to WebSocket (see WebSocket/WebSocketUpgradingHTTPChannel.swift); both already come with hummingbird-websocket.
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // The client's feed hands changes to the app through a channel with back-pressure.
        // `swift package generate-documentation --target StockroomClient`: the SDK's DocC catalog (a
        // command plugin only: nothing of it is built into a product).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        // Already Hummingbird's: the server and the CLI name its ServiceGroup and Service directly.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // The PostgreSQL backend (issue #28) and its tests.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // Already postgres-nio's: TLS contexts for the PostgreSQL backend's own connections.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        .target(
            name: "StockroomCore",
            swiftSettings: swiftSettings
        ),
        // The contract's encoding: every body the API sends, codes to statuses, cursor formats.
        .target(
            name: "StockroomWire",
            dependencies: ["StockroomCore"],
            swiftSettings: swiftSettings
        ),
        // What the server needs from storage (the `Storage` protocol) and the values it trades in,
        // with the feed's in-memory fan-out (`ChangeHub`): no database in it.
        .target(
            name: "StockroomStorage",
            dependencies: ["StockroomCore", "StockroomWire", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "StockroomMigrations",
            path: "Migrations",
            exclude: ["README.md"],
            // sql: SQLite's migrations; postgres: PostgreSQL's.
            resources: [.copy("sql"), .copy("postgres")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "StockroomStore",
            dependencies: [
                "StockroomCore",
                "StockroomWire",
                "StockroomStorage",
                "StockroomMigrations",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, already GRDB's: the streams read columns in place.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The PostgreSQL backend: the same `Storage` on a PostgreSQL database that several daemons share.
        .target(
            name: "StockroomPostgres",
            dependencies: [
                "StockroomCore",
                "StockroomWire",
                "StockroomStorage",
                "StockroomMigrations",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "StockroomServer",
            dependencies: [
                "StockroomCore",
                "StockroomWire",
                "StockroomStorage",
                "StockroomStore",
                "StockroomPostgres",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "WSCore", package: "swift-websocket"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Resources")],
            swiftSettings: swiftSettings
        ),
        // The Swift runtime's global-executor hook by address (GenericGlobalExecutor).
        .target(name: "CConcurrencyHook"),
        .executableTarget(
            name: "stockroom",
            dependencies: [
                "CConcurrencyHook",
                "StockroomServer",
                "StockroomStore",
                "StockroomPostgres",
                "StockroomStorage",
                "StockroomWire",
                "StockroomCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The Swift SDK: typed API, feed, offline queue and SyncedStore. Core only: never the server or its store.
        .target(
            name: "StockroomClient",
            dependencies: [
                "StockroomCore",
                "StockroomWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                // Locks that iOS 17 and macOS 14 have (Synchronization's Mutex needs iOS 18 and macOS 15).
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Two terminals, two devices of one user: the handoff, on StockroomClient's public API only.
        .executableTarget(
            name: "StockroomHandoff",
            dependencies: ["StockroomClient"],
            path: "Sources/stockroom-handoff",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StockroomCoreTests",
            dependencies: ["StockroomCore", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StockroomWireTests",
            dependencies: ["StockroomWire", "StockroomCore", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        // What any Storage must do, run on each backend (Tests/StorageContractTests/StorageBackend.swift).
        .testTarget(
            name: "StorageContractTests",
            dependencies: ["StockroomStorage", "StockroomStore", "StockroomPostgres", "StockroomWire", "StockroomCore", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        // The PostgreSQL backend's tests, on a real server the tests start (TestSupport/TestPostgres).
        .testTarget(
            name: "StockroomPostgresTests",
            dependencies: [
                "StockroomPostgres",
                "StockroomStorage",
                "StockroomWire",
                "StockroomCore",
                "TestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StockroomStoreTests",
            dependencies: [
                "StockroomStore", "StockroomStorage", "StockroomWire", "StockroomCore", "TestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // glibc's posix_spawn extensions (change directory, close inherited descriptors) for the
        // tests that run the binary.
        .target(name: "CSpawn", path: "Tests/CSpawn"),
        // What the test targets share: bounded waits, child processes, a throwaway PostgreSQL.
        .target(name: "TestSupport", dependencies: ["CSpawn", "StockroomCore", "StockroomStorage", "StockroomWire"], path: "Tests/TestSupport", swiftSettings: swiftSettings),
        .testTarget(
            name: "StockroomServerTests",
            dependencies: [
                "TestSupport",
                "StockroomServer",
                "StockroomStore",
                "StockroomPostgres",
                "StockroomStorage",
                "StockroomWire",
                "StockroomCore",
                // Built so that the process tests can run the real binary.
                "stockroom",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // To write test databases the server must refuse (a backup with a newer schema).
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StockroomClientTests",
            dependencies: [
                "StockroomClient",
                "StockroomCore",
                "TestSupport",
                // Only to run real servers on loopback (in process) and to reach into their database
                // (trim the log, restore a backup); the library itself depends on neither.
                "StockroomServer",
                "StockroomStore",
                "StockroomStorage",
                .product(name: "Configuration", package: "swift-configuration"),
                // To write a queue file as an earlier version of the SDK did.
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
