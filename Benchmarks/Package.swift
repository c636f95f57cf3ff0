// swift-tools-version:6.2
// A separate package, so that the main package's `swift build` / `swift test` never builds it.
// Build: swift build -c release --package-path Benchmarks --scratch-path Benchmarks/.build-bench [--product NAME]
// Store benchmarks (package-benchmark):
//   swift package --package-path Benchmarks --scratch-path Benchmarks/.build-bench benchmark
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
        .executable(name: "StoreCounts", targets: ["StoreCounts"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // Only MallocInterposer (malloc counts): the default RuntimeInterposer trait would need
        // ordo-one/swift-runtime-interposer, which this machine does not have.
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
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
        // The store's operations that both StoreBenchmarks and StoreCounts measure, on a real SQLite file.
        .target(
            name: "StoreOperations",
            dependencies: [
                .product(name: "StockroomStore", package: rootPackage),
            ]
        ),
        // package-benchmark's suite: mallocs and wall clock per operation (instructions where the
        // kernel exposes a hardware counter).
        .executableTarget(
            name: "StoreBenchmarks",
            dependencies: [
                "StoreOperations",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/StoreBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        // valgrind's client requests (zero and dump callgrind's counters), no-ops outside valgrind.
        .target(name: "CCallgrind"),
        // The same operations under `valgrind --tool=callgrind`: instructions per operation without a
        // hardware counter (see callgrind/store-counts.sh).
        .executableTarget(
            name: "StoreCounts",
            dependencies: ["StoreOperations", "CCallgrind"]
        ),
    ]
)
