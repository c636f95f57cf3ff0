// swift-tools-version:6.2
// A separate package, so that the main package's `swift build` / `swift test` never builds it.
// Build: swift build -c release --package-path Benchmarks --scratch-path Benchmarks/.build-bench [--product NAME]
import PackageDescription

// The repository root, for ClientBench. SwiftPM names a path dependency after its folder, which is
// whatever the clone is called, so the name is read from the path rather than written down.
let rootDirectory = String(Context.packageDirectory.split(separator: "/").dropLast().joined(separator: "/"))
let rootPackage = String(rootDirectory.split(separator: "/").last ?? "stockroom").lowercased()

let package = Package(
    name: "stockroom-benchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "BaselineServer", targets: ["BaselineServer"]),
        .executable(name: "ClientBench", targets: ["ClientBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(path: "/" + rootDirectory),
    ],
    targets: [
        .executableTarget(
            name: "BaselineServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        // SyncedStore's figures: applying feed changes, a cold start from a snapshot, an optimistic command.
        .executableTarget(
            name: "ClientBench",
            dependencies: [
                .product(name: "StockroomClient", package: rootPackage),
            ]
        ),
    ]
)
